/**
 * `switchyard usage` as a user runs it: `switchyard serve` with a named key and limits, a
 * few requests through it, then `switchyard usage` as its own process reading them back.
 */
import http from "node:http";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeServer } from "../../tools/fakes/fake-openai";
import { BIN, freePort, serve, type Served } from "../support/serve-cli";
import { untilMinuteHas } from "../support/limits";

const ADMIN_TOKEN = "usage-admin-token";
const CLIENT_KEY = "sk-usage-e2e-client";
const REQUESTS = 3;
const USAGE = { prompt_tokens: 10, completion_tokens: 5 }; // what the fake reports for every answer
// 10 input tokens at 1,000 and 5 output at 2,000 per million: 0.02 a request
const SPEND_PER_REQUEST = (10 * 1_000 + 5 * 2_000) / 1e6;
const MINUTE_LEFT_MS = 30_000; // the requests and the two reads of their minute take seconds; a UTC minute ending between them would read the next, empty one

let tmp: string;
let upstream: FakeServer;
let router: Served;

function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // No ADMIN_TOKEN leaks in from the test's own environment: each case says where its token comes from.
    const { ADMIN_TOKEN: _a, SWITCHYARD_ADMIN_TOKEN: _b, ...base } = process.env;
    const child = spawn(process.execPath, [BIN, ...args], { cwd: tmp, stdio: ["ignore", "pipe", "pipe"], env: { ...base, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "switchyard-usage-"));
  upstream = await startFakeOpenAI({ id: "usage-up", behaviour: { answer: { content: "hello", usage: USAGE } } });
  const config = path.join(tmp, "limits.yaml");
  await writeFile(
    config,
    `models:
  chat: { pool: gpu, pricing: { input: 1000, output: 2000 } }
pools:
  gpu: { replicas: [{ id: up, url: "${upstream.url}" }] }
auth:
  keys:
    - { name: alice, key: "\${CLIENT_KEY}", team: research }
limits:
  - { key: alice, requests_per_minute: 1000, tokens_per_minute: 100000, concurrent_requests: 8 }
  - { team: research, spend: { amount: 50, window: month } }
`,
  );
  router = await serve(["--config", config, "--port", "0", "--persist-to", path.join(tmp, "state"), "--var", `ADMIN_TOKEN=${ADMIN_TOKEN}`, "--var", `CLIENT_KEY=${CLIENT_KEY}`], tmp);
  await untilMinuteHas(MINUTE_LEFT_MS);
  for (let i = 0; i < REQUESTS; i++) {
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${CLIENT_KEY}` },
      body: JSON.stringify({ model: "chat", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer(); // a limited answer settles when its body ends
  }
}, 90_000); // serve, up to MINUTE_LEFT_MS for the next minute, the requests
afterAll(async () => {
  await router?.stop("SIGTERM").catch(() => {});
  await upstream?.close();
  await rm(tmp, { recursive: true, force: true });
});

/** The table's rows as {bucket, dimension} -> cells, by the header's column names. */
function rowsOf(stdout: string): Map<string, Record<string, string>> {
  const [header, ...lines] = stdout.trimEnd().split("\n");
  const names = header!.split(/\s{2,}/);
  const rows = new Map<string, Record<string, string>>();
  for (const line of lines) {
    const cells = line.trim().split(/\s+/);
    const row = Object.fromEntries(names.map((n, i) => [n, cells[i]!]));
    rows.set(`${row.BUCKET} ${row.DIMENSION}`, row);
  }
  return rows;
}

describe("switchyard usage", () => {
  it("prints each bucket alice's requests count against, with what they spent", async () => {
    const { code, stdout, stderr } = await runCli(["usage", "--url", router.url, "--key", "alice"], { ADMIN_TOKEN });
    expect(code, stderr).toBe(0);
    const rows = rowsOf(stdout);
    expect([...rows.keys()].sort()).toEqual(["key=alice concurrent", "key=alice requests", "key=alice tokens", "team=research spend"]);
    expect(rows.get("key=alice requests")).toMatchObject({ WINDOW: "minute", LIMIT: "1000", SPENT: String(REQUESTS), REMAINING: String(1000 - REQUESTS) });
    const tokens = REQUESTS * (USAGE.prompt_tokens + USAGE.completion_tokens);
    expect(rows.get("key=alice tokens")).toMatchObject({ LIMIT: "100000", SPENT: String(tokens), REMAINING: String(100_000 - tokens) });
    expect(rows.get("key=alice tokens")!["RESETS IN"]).toMatch(/^\d+s$|^1m0s$/); // within the UTC minute
    expect(rows.get("key=alice concurrent")).toMatchObject({ WINDOW: "none", SPENT: "0", "RESETS IN": "-" });
    expect(rows.get("team=research spend")).toMatchObject({ WINDOW: "month", LIMIT: "50", SPENT: String(REQUESTS * SPEND_PER_REQUEST) });
    expect(stdout).not.toContain(CLIENT_KEY);
  });

  it("prints the router's answer with --json, the token read from .dev.vars", async () => {
    await writeFile(path.join(tmp, ".dev.vars"), `ADMIN_TOKEN="${ADMIN_TOKEN}"\n`);
    try {
      const { code, stdout, stderr } = await runCli(["usage", "--url", router.url, "--team", "research", "--json"]);
      expect(code, stderr).toBe(0);
      const answer = JSON.parse(stdout) as { filter: unknown; buckets: { bucket: string; usage: Record<string, { spent: number }> }[] };
      expect(answer.filter).toEqual({ team: "research" });
      expect(answer.buckets.map((b) => b.bucket).sort()).toEqual(["key=alice", "team=research"]);
      expect(answer.buckets.find((b) => b.bucket === "key=alice")!.usage.requests!.spent).toBe(REQUESTS);
    } finally {
      await rm(path.join(tmp, ".dev.vars"));
    }
  });

  it("passes --model and --window to the router, which keeps only what is counted in that window", async () => {
    const { code, stdout, stderr } = await runCli(["usage", "--url", router.url, "--model", "chat", "--window", "month", "--json"], { ADMIN_TOKEN });
    expect(code, stderr).toBe(0);
    const answer = JSON.parse(stdout) as { filter: unknown; buckets: { bucket: string; usage: Record<string, unknown> }[] };
    expect(answer.filter).toEqual({ model: "chat", window: "month" });
    expect(answer.buckets.map((b) => [b.bucket, Object.keys(b.usage)])).toEqual([["team=research", ["spend"]]]);
  });

  it("says plainly what the router refused in the query, and exits 1", async () => {
    const { code, stdout, stderr } = await runCli(["usage", "--url", router.url, "--window", "week"], { ADMIN_TOKEN });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(`switchyard usage: the router at ${router.url} refused the query (400): 'window' must be one of minute, hour, day, month, fixed, none; got 'week'\n`);
  });

  it("says plainly that a wrong token was refused, and exits 1", async () => {
    const { code, stdout, stderr } = await runCli(["usage", "--url", router.url, "--token", "not-the-token"]);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(`switchyard usage: the router at ${router.url} refused the admin token (401): check --token or ADMIN_TOKEN\n`);
  });

  it("says plainly that nothing answers, and exits 1; no token at all is a usage error", async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const down = await runCli(["usage", "--url", nobody], { ADMIN_TOKEN });
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`switchyard usage: cannot reach ${nobody}: ECONNREFUSED\n`);
    const none = await runCli(["usage", "--url", router.url]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("no admin token");
  });

  it("says plainly that a server without /admin/usage is not a router with limits, and exits 1", async () => {
    const { code, stderr } = await runCli(["usage", "--url", upstream.url], { ADMIN_TOKEN });
    expect(code).toBe(1);
    expect(stderr).toBe(`switchyard usage: the router at ${upstream.url} has no /admin/usage (404): is it a Switchyard router with limits?\n`);
  });

  it("says plainly that a 200 with other JSON is not a usage report, in one line, and exits 1", async () => {
    const other = http.createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}'));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
    try {
      const { code, stderr } = await runCli(["usage", "--url", url], { ADMIN_TOKEN });
      expect(code).toBe(1);
      expect(stderr).toBe(`switchyard usage: the router at ${url} answered JSON that is not a usage report (no "buckets" list): is it a Switchyard router? {"status":"ok"}\n`);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});
