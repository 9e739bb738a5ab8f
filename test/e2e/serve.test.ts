/**
 * The CLI as a user runs it: real processes (`node bin/switchyard.mjs ...`), real
 * workerd, real fake model servers on 127.0.0.1, the official `openai` client.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeServer } from "../../tools/fakes/fake-openai";
import { startFakeProvider } from "../../tools/fakes/fake-provider";
import { BIN, freePort, serve as serveCli, type Served } from "../support/serve-cli";

const ABORT_WAIT_MS = 5_000;
const ADMIN_TOKEN = "e2e-admin-token";

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "switchyard-e2e-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

type Upstream = Pick<FakeServer, "id" | "url">;
const OFFLINE_A: Upstream = { id: "a", url: "http://127.0.0.1:9101" };
const OFFLINE_B: Upstream = { id: "b", url: "http://127.0.0.1:9103" };

function configYaml(a: Upstream, b: Upstream, weightB = 40): string {
  return `models:
  demo-chat: { pool: gpu }
pools:
  gpu:
    replicas:
      - { id: ${a.id}, url: "${a.url}", weight: 60, labels: [local] }
      - { id: ${b.id}, url: "${b.url}", weight: ${weightB}, labels: [remote] }
routing: { try_timeout_ms: 30000, deadline_ms: 120000 }
`;
}

async function writeTmp(name: string, text: string): Promise<string> {
  const file = path.join(tmp, name);
  await writeFile(file, text);
  return file;
}

/** Runs one CLI command to completion. cwd is the temp dir so nothing lands in the repo. */
function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: tmp, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** `switchyard serve ...` in the background, in the temp dir so nothing lands in the repo. */
const serve = (args: string[]): Promise<Served> => serveCli(args, tmp);

describe("switchyard validate", () => {
  it("accepts a valid file and describes it", async () => {
    const file = await writeTmp("valid.yaml", configYaml(OFFLINE_A, OFFLINE_B));
    const { code, stdout } = await runCli(["validate", file]);
    expect(code).toBe(0);
    expect(stdout).toContain("demo-chat");
  });

  it("names the failing path and exits 1", async () => {
    const bad = configYaml(OFFLINE_A, OFFLINE_B, -4);
    const { code, stderr } = await runCli(["validate", await writeTmp("bad.yaml", bad)]);
    expect(code).toBe(1);
    expect(stderr.split("\n").some((line) => line.startsWith("pools.gpu.replicas[1].weight:"))).toBe(true);
  });

  it("names a number past its bound with its path and unit", async () => {
    const bad = configYaml(OFFLINE_A, OFFLINE_B).replace("deadline_ms: 120000", "deadline_ms: 1e308");
    const { code, stderr } = await runCli(["validate", await writeTmp("huge.yaml", bad)]);
    expect(code).toBe(1);
    expect(stderr.split("\n")).toContain("routing.deadline_ms: must be <= 3600000 (ms: an hour)");
  });

  it("shows a ${VAR} reference in its errors, never the value from the environment", async () => {
    const secret = "sk-e2e-secret-0123456789";
    const bad = configYaml(OFFLINE_A, OFFLINE_B).replace("demo-chat: { pool: gpu }", 'demo-chat: { pool: "${SWITCHYARD_E2E_SECRET}" }');
    const { code, stdout, stderr } = await runCli(["validate", await writeTmp("secret.yaml", bad)], { SWITCHYARD_E2E_SECRET: secret });
    expect(code).toBe(1);
    expect(stderr).toContain('models.demo-chat.pool: unknown pool "${SWITCHYARD_E2E_SECRET}"');
    expect(stdout + stderr).not.toContain(secret);
  });

  it("accepts the RouteWise reference config, describes its routes and warns it needs calibrating", async () => {
    const file = fileURLToPath(new URL("../../examples/routewise.yaml", import.meta.url));
    const { code, stdout, stderr } = await runCli(["validate", file]);
    expect(code).toBe(0);
    expect(stdout).toContain("chat-fast -> routewise over 4 routes (alpha 0.25, hedge percentile, SLO 2000 ms at p95)");
    expect(stdout).toContain("    prepaid-us: quota, 5000000 tokens per 86400 s (fixed window), pool prepaid-team, free within the quota");
    expect(stderr).toContain(
      "warning: models.chat-fast: has quota routes, so it answers 503 (routewise_uncalibrated) until every route has envelope_min_samples (20) latency samples; " +
        "seed them with `switchyard calibrate chat-fast --url <router>` or POST /admin/routewise/chat-fast/calibrate\n",
    );
  });

  it("exits 1 on a missing file and 2 on a bad command line", async () => {
    const missing = await runCli(["validate", path.join(tmp, "nope.yaml")]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read config file .*nope\.yaml/);
    expect((await runCli(["no-such-command"])).code).toBe(2);
    expect((await runCli(["validate"])).code).toBe(2);
  });
});

describe("switchyard serve --config", () => {
  let a: FakeServer;
  let b: FakeServer;
  let router: Served;
  let client: OpenAI;
  let port: number;

  beforeAll(async () => {
    a = await startFakeOpenAI({ id: "fake-a" });
    b = await startFakeOpenAI({ id: "fake-b" });
    const config = await writeTmp("serve.yaml", configYaml(a, b));
    port = await freePort();
    router = await serve(["--config", config, "--port", String(port), "--persist-to", path.join(tmp, "state-serve"), "--var", `ADMIN_TOKEN=${ADMIN_TOKEN}`]);
    client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: "unused", maxRetries: 0 });
  });
  afterAll(async () => {
    // SIGTERM: serve then stops workerd itself; a SIGKILLed serve leaves workerd running as an orphan.
    await router?.stop("SIGTERM").catch(() => {});
    await Promise.all([a?.close(), b?.close()]);
  });

  it("prints one ready line with the URL and config version, never a secret", () => {
    expect(router.readyLine).toMatch(/^switchyard ready on http:\/\/127\.0\.0\.1:\d+ \(config \S+\)$/);
    expect(new URL(router.url).port).toBe(String(port)); // --port is the port clients call (the relay's; with --direct, the Worker's own socket)
    expect(router.output()).not.toContain(ADMIN_TOKEN);
  });

  it("answers a chat completion from a fake server", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: "demo-chat", messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toMatch(/^Hello from fake-[ab]$/);
    expect(["fake-a", "fake-b"]).toContain(response.headers.get("x-switchyard-replica"));
  });

  it("streams a chat completion in several chunks", async () => {
    const stream = await client.chat.completions.create({
      model: "demo-chat",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    let chunks = 0;
    let text = "";
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(chunks).toBeGreaterThan(1);
    expect(text).toMatch(/tok0 .*tok1 /);
  });

  it("aborts the upstream request when the client disconnects mid-stream", async () => {
    const slow = { chunkIntervalMs: 200, streamChunks: 50 };
    a.setBehaviour(slow);
    b.setBehaviour(slow);
    a.resetStats();
    b.resetStats();
    try {
      await readFirstChunkThenHangUp(`${router.url}/v1/chat/completions`, {
        model: "demo-chat",
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      });
      const deadline = Date.now() + ABORT_WAIT_MS;
      while (a.stats().aborted + b.stats().aborted < 1 && Date.now() < deadline) await sleep(50);
      expect(a.stats().aborted + b.stats().aborted).toBeGreaterThanOrEqual(1);
    } finally {
      a.setBehaviour({});
      b.setBehaviour({});
    }
  });

  // Before response headers, workerd hears a hang-up only as a connection error: a reset
  // (RST) is delivered as request.signal, an orderly close (FIN) is not (docs/routing.md,
  // "Client disconnect"). Each upstream answers 503 after 1.5 s, which the router would
  // retry on the other replica if it still thought the client was there.
  const slowRefusal = { latencyMs: 1_500, status: 503 };

  /** The client sends a request and, once an upstream has it, leaves by `hangUp`: the router must cut that try, try nothing else and release the lease. */
  async function expectHangUpSeen(hangUp: (socket: net.Socket) => void): Promise<void> {
    a.setBehaviour(slowRefusal);
    b.setBehaviour(slowRefusal);
    a.resetStats();
    b.resetStats();
    try {
      const socket = await sendRaw(router.url, "/v1/chat/completions", { model: "demo-chat", messages: [{ role: "user", content: "hi" }] });
      await waitFor(() => modelRequests(a) + modelRequests(b) >= 1, "the request never reached an upstream");
      hangUp(socket);
      // Cut by the router: an upstream left alone answers (completed), it is never aborted.
      await waitFor(() => a.stats().aborted + b.stats().aborted >= 1, "the upstream never saw the client's leaving");
      await sleep(slowRefusal.latencyMs + 500); // past the moment the first try would have answered 503 and the second begun
      expect(modelRequests(a) + modelRequests(b), "nothing tried after the client left").toBe(1);
      expect(a.stats().completed + b.stats().completed).toBe(0);
      await waitFor(async () => (await poolInflight(router.url, "gpu")) === 0, "the lease was not released");
    } finally {
      a.setBehaviour({});
      b.setBehaviour({});
    }
  }

  it("aborts the upstream request, and tries nothing else, when the client resets its connection before response headers", async () => {
    await expectHangUpSeen((socket) => socket.resetAndDestroy());
  });

  it("sees an orderly close before response headers through its relay: the upstream is aborted, nothing else is tried", async () => {
    await expectHangUpSeen((socket) => socket.destroy()); // FIN: what most clients send when they give up; the relay makes it a reset toward workerd
  });

  it("publishes YAML through PUT /admin/config: the bundled Worker loads its YAML parser on demand", async () => {
    const admin = (body: string) => fetch(`${router.url}/admin/config`, { method: "PUT", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });
    const broken = await admin("models: [unclosed");
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { issues: { path: string }[] }).issues[0]!.path).toBe("(document)");

    const published = await admin(configYaml(a, b, 0));
    expect(published.status).toBe(201);
    const { version } = (await published.json()) as { version: string };
    const routing = (await (await fetch(`${router.url}/routing`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { config: { version: string } };
    expect(routing.config.version).toBe(version);
    const { response } = await client.chat.completions.create({ model: "demo-chat", messages: [{ role: "user", content: "hi" }] }).withResponse();
    expect(response.headers.get("x-switchyard-replica")).toBe("fake-a"); // fake-b's weight is 0 now
  });

  it("calibrates a RouteWise model with `switchyard calibrate`, after which it serves", async () => {
    const provider = await startFakeProvider({ id: "metered", behaviour: { quotaLimit: 1_000_000, outputTokens: 4 } });
    try {
      const published = await fetch(`${router.url}/admin/config`, {
        method: "PUT",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        body: `models:
  rw:
    router: routewise
    router_params: { envelope_min_samples: 2 }
    routes:
      - { id: sub, url: "${provider.url}", provider_type: quota, quota: { limit: 1000000 }, quota_source: { url: "${provider.url}/usage", used_path: data.used, reset_path: data.reset_at, window_s: 3600 } }
`,
      });
      expect(published.status).toBe(201);
      const refused = await fetch(`${router.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "rw", messages: [{ role: "user", content: "hi" }] }) });
      expect(refused.status).toBe(503);

      expect((await runCli(["calibrate", "rw", "--url", router.url, "--probes", "2"])).code).toBe(2); // no token in the environment
      const calibrated = await runCli(["calibrate", "rw", "--url", router.url, "--probes", "2", "--max-tokens", "3"], { SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN });
      expect(calibrated.code, calibrated.stderr).toBe(0);
      expect(JSON.parse(calibrated.stdout)).toMatchObject({ model: "rw", calibrated: true, samples: { sub: 2 } });

      const { data, response } = await client.chat.completions.create({ model: "rw", messages: [{ role: "user", content: "hi" }] }).withResponse();
      expect(response.headers.get("x-switchyard-route")).toBe("sub");
      expect(data.usage?.completion_tokens).toBe(4);
    } finally {
      await provider.close();
    }
  });

  it("exits 0 on SIGTERM within a few seconds", async () => {
    expect(await router.stop("SIGTERM")).toBe(0);
  });
});

describe("switchyard push, then serve without --config", () => {
  it("serves the pushed version from the shared local KV", async () => {
    const a = await startFakeOpenAI({ id: "push-a" });
    const b = await startFakeOpenAI({ id: "push-b" });
    const state = path.join(tmp, "state-push");
    try {
      const pushed = await runCli(["push", await writeTmp("push.yaml", configYaml(a, b)), "--persist-to", state]);
      expect(pushed.code, pushed.stderr).toBe(0);
      const version = /version (\S+)/.exec(pushed.stdout)?.[1];
      expect(version).toBeDefined();

      const router = await serve(["--port", "0", "--persist-to", state, "--var", `ADMIN_TOKEN=${ADMIN_TOKEN}`]);
      try {
        expect(router.readyLine).toContain(version!);
        // /routing takes the admin token (routing.public_view defaults to false).
        const routing = (await (await fetch(`${router.url}/routing`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { config: { version: string } };
        expect(routing.config.version).toBe(version);
      } finally {
        expect(await router.stop("SIGINT")).toBe(0);
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("says so in its ready line when the Worker rejected the version KV names: a ${VAR} it lacks, pushed with a warning", async () => {
    const state = path.join(tmp, "state-push-rejected");
    const text = `models:\n  m: { pool: p }\npools:\n  p: { replicas: [{ id: r, url: "\${NOT_IN_WORKER}" }] }\n`;
    const pushed = await runCli(["push", await writeTmp("push-rejected.yaml", text), "--persist-to", state]);
    expect(pushed.code, pushed.stderr).toBe(0); // push cannot see the Worker's secrets: a warning
    const version = /version (\S+)/.exec(pushed.stdout)?.[1];
    const router = await serve(["--port", "0", "--persist-to", state, "--var", `ADMIN_TOKEN=${ADMIN_TOKEN}`]);
    try {
      expect(router.readyLine).toBe(`switchyard ready on ${router.url} (config ${version} was rejected, serving nothing (503 no_config); GET /routing shows why)`);
    } finally {
      expect(await router.stop("SIGINT")).toBe(0);
    }
  });

  it("rejects an invalid file without writing anything", async () => {
    const state = path.join(tmp, "state-push-bad");
    const bad = configYaml(OFFLINE_A, OFFLINE_B, -1);
    const pushed = await runCli(["push", await writeTmp("push-bad.yaml", bad), "--persist-to", state]);
    expect(pushed.code).toBe(1);
    expect(pushed.stderr).toContain("pools.gpu.replicas[1].weight");
  });
});

/** node:http so the test controls the socket: read one body chunk, then cut the connection. */
function readFirstChunkThenHangUp(url: string, body: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", headers: { "content-type": "application/json" } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      res.once("data", () => {
        req.destroy();
        resolve();
      });
    });
    req.once("error", (err) => {
      if (!req.destroyed) reject(err);
    });
    req.end(JSON.stringify(body));
  });
}

/** A request written on a raw socket (so the test chooses how to hang up), its body sent whole. */
async function sendRaw(base: string, path: string, body: unknown): Promise<net.Socket> {
  const { hostname, port } = new URL(base);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => {}); // the hang-up is the test's own doing
  const text = JSON.stringify(body);
  socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
  return socket;
}

function modelRequests(server: FakeServer): number {
  return server.stats().byPath["/v1/chat/completions"] ?? 0;
}

async function waitFor(check: () => boolean | Promise<boolean>, message: string, timeoutMs = ABORT_WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(message);
    await sleep(20);
  }
}

/** Leases held on a pool's replicas, as /metrics sums them over isolates. */
async function poolInflight(base: string, pool: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("switchyard_inflight{") && line.includes(`pool="${pool}"`))
    .reduce((n, line) => n + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}

describe("switchyard serve with a file of InferenceGraph documents only", () => {
  let model: FakeServer;
  let router: Served;
  beforeAll(async () => {
    model = await startFakeOpenAI({ id: "iris", behaviour: { reply: { body: { predictions: [1, 1] } } } });
    const file = await writeTmp(
      "graph-only.yaml",
      `apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: model-chainer
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
        - serviceUrl: ${model.url}/v1/models/sklearn-iris:predict
        - serviceUrl: ${model.url}/v1/models/xgboost-iris:predict
          data: $request
`,
    );
    router = await serve(["--config", file, "--port", "0", "--persist-to", path.join(tmp, "state-graph")]);
  });
  afterAll(async () => {
    // SIGTERM: serve then stops workerd itself; a SIGKILLed serve leaves workerd running as an orphan.
    await router?.stop("SIGTERM").catch(() => {});
    await model?.close();
  });

  it("serves the graph at /graphs/<name> with KServe's answer", async () => {
    const res = await fetch(`${router.url}/graphs/model-chainer`, { method: "POST", body: JSON.stringify({ instances: [[6.8, 2.8, 4.8, 1.4]] }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ predictions: [1, 1] });
    expect(res.headers.get("x-switchyard-route")).toBe("root/0,root/1");
    expect(model.stats().recent.map((r) => r.path)).toEqual(["/v1/models/sklearn-iris:predict", "/v1/models/xgboost-iris:predict"]);
  });
});

describe("switchyard serve --direct (no relay)", () => {
  let a: FakeServer;
  let b: FakeServer;
  let router: Served;

  beforeAll(async () => {
    a = await startFakeOpenAI({ id: "fake-a" });
    b = await startFakeOpenAI({ id: "fake-b" });
    const config = await writeTmp("direct.yaml", configYaml(a, b));
    router = await serve(["--direct", "--config", config, "--port", "0", "--persist-to", path.join(tmp, "state-direct"), "--var", `ADMIN_TOKEN=${ADMIN_TOKEN}`]);
  });
  afterAll(async () => {
    await router?.stop("SIGTERM").catch(() => {});
    await Promise.all([a?.close(), b?.close()]);
  });

  it("answers on workerd's own socket, whole and streamed", async () => {
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: "demo-chat", messages: [{ role: "user", content: "hi" }] });
    expect(answer.choices[0]!.message.content).toMatch(/^Hello from fake-[ab]$/);
    const stream = await client.chat.completions.create({ model: "demo-chat", stream: true, messages: [{ role: "user", content: "hi" }] });
    let chunks = 0;
    for await (const _chunk of stream) chunks++;
    expect(chunks).toBeGreaterThan(1);
  });

  it("does not see an orderly close before response headers without the relay: the try runs to its end, and the lease is released then", async () => {
    const slowAnswer = { latencyMs: 1_000 };
    a.setBehaviour(slowAnswer);
    b.setBehaviour(slowAnswer);
    a.resetStats();
    b.resetStats();
    try {
      const socket = await sendRaw(router.url, "/v1/chat/completions", { model: "demo-chat", messages: [{ role: "user", content: "hi" }] });
      await waitFor(() => modelRequests(a) + modelRequests(b) >= 1, "the request never reached an upstream");
      socket.destroy(); // FIN: what most clients send when they give up
      // The runtime's limit, as docs/routing.md states it: if this fails, workerd now delivers a FIN; update the docs.
      await waitFor(() => a.stats().completed + b.stats().completed >= 1, "the try did not run to its answer");
      expect(a.stats().aborted + b.stats().aborted).toBe(0);
      // The bound: the lease is held until that try ends, not longer.
      await waitFor(async () => (await poolInflight(router.url, "gpu")) === 0, "the lease was not released when the try ended");
      expect(modelRequests(a) + modelRequests(b)).toBe(1);
    } finally {
      a.setBehaviour({});
      b.setBehaviour({});
    }
  });

});

describe("switchyard serve started through npm, whose parent goes away", () => {
  // npm runs a bin under a shell, and a SIGTERM to npm ends npm and that shell without
  // reaching the bin: serve (and its workerd) went on holding the port. Here a Node parent
  // plays npm's shell: it starts serve with npm's environment or without, then is killed.
  async function serveUnderParent(name: string, npm: boolean): Promise<{ pid: number; url: string; output: () => string }> {
    const config = await writeTmp(`${name}.yaml`, configYaml(OFFLINE_A, OFFLINE_B));
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (npm) env.npm_command = "exec";
    else delete env.npm_command;
    const args = [BIN, "serve", "--config", config, "--port", "0", "--persist-to", path.join(tmp, `state-${name}`)];
    const script = `const c = require("node:child_process").spawn(process.execPath, ${JSON.stringify(args)}, { stdio: ["ignore", "inherit", "inherit"] }); console.log("serve pid " + c.pid); setInterval(() => {}, 60000);`;
    const parent = spawn(process.execPath, ["-e", script], { cwd: tmp, stdio: ["ignore", "pipe", "pipe"], env });
    let out = "";
    parent.stdout.on("data", (d: Buffer) => (out += d.toString()));
    parent.stderr.on("data", (d: Buffer) => (out += d.toString()));
    await waitFor(() => /ready on http/.test(out), `serve never got ready:\n${out}`, 45_000);
    parent.kill("SIGKILL");
    return { pid: Number(/serve pid (\d+)/.exec(out)![1]), url: /ready on (http:\/\/\S+)/.exec(out)![1]!, output: () => out };
  }

  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it("stops, and frees its port, once npm is gone", async () => {
    const served = await serveUnderParent("npm-parent", true);
    try {
      await waitFor(() => !alive(served.pid), `serve outlived npm:\n${served.output()}`, 8_000);
      await expect(fetch(`${served.url}/health`, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow();
      expect(served.output()).toContain("npm, which started this process, has gone; stopping");
    } finally {
      if (alive(served.pid)) process.kill(served.pid, "SIGTERM"); // the failing case leaves no orphan behind
    }
  });

  it("keeps serving when started another way and its parent exits (as nohup … & expects)", async () => {
    const served = await serveUnderParent("plain-parent", false);
    try {
      await sleep(2_500); // past two of the parent checks npm's case runs
      expect(alive(served.pid)).toBe(true);
      expect((await fetch(`${served.url}/health`)).status).toBeLessThan(500);
    } finally {
      process.kill(served.pid, "SIGTERM");
      await waitFor(() => !alive(served.pid), "serve did not stop on SIGTERM", 8_000);
    }
  });
});
