/**
 * What a client that leaves while its request awaits a pool's object leaves behind, seen
 * as a user runs the router: `switchyard serve`, a real client that gives up, a fake
 * upstream, and objects made 1.5 s away (`SWITCHYARD_SIMULATED_DO_RTT_MS`) so the client
 * can leave in the middle of one call.
 *
 * A client that leaves cancels the I/O its request awaits unless the invocation is held
 * open, and then code after the await never runs (serve-limits.test.ts has the limit gate's
 * side of this). Through `app.fetch` in a workerd test isolate the handler goes on instead,
 * so only a real client over HTTP shows it.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeServer } from "../../tools/fakes/fake-openai";
import { freePort, serve, type Served } from "../support/serve-cli";

const ADMIN_TOKEN = "e2e-admin-token";
const RTT_MS = 1_500; // each object call: long enough that the client can leave in the middle of one, whatever the machine's load
const COOLDOWN_MS = 1_000;

// One replica whose circuit opens on its first failure and half-opens after COOLDOWN_MS,
// one probe at a time. Affinity (on by default) claims the client's pin on its first request.
const CONFIG = (upstreamUrl: string) => `models:
  m: { pool: p }
pools:
  p:
    circuit: { consecutive_failures: 1, cooldown_ms: ${COOLDOWN_MS}, max_cooldown_ms: ${COOLDOWN_MS}, half_open_probes: 1 }
    replicas: [{ id: a, url: "${upstreamUrl}" }]
`;

let tmp: string;
let upstream: FakeServer;
let router: Served;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "switchyard-e2e-leaving-"));
  upstream = await startFakeOpenAI({ id: "a" });
  const config = path.join(tmp, "pool.yaml");
  await writeFile(config, CONFIG(upstream.url));
  router = await serve(["--config", config, "--port", "0", "--persist-to", path.join(tmp, "state"), "--var", `ADMIN_TOKEN=${ADMIN_TOKEN}`, "--var", `SWITCHYARD_SIMULATED_DO_RTT_MS=${RTT_MS}`], tmp);
});
afterAll(async () => {
  await router?.stop("SIGTERM").catch(() => {});
  await upstream?.close();
  await rm(tmp, { recursive: true, force: true });
});

const chat = (signal?: AbortSignal) =>
  fetch(`${router.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    ...(signal && { signal }),
  });
const sent = () => upstream.stats().byPath["/v1/chat/completions"] ?? 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** switchyard_requests_total summed over the samples with this status. */
async function requestsWithStatus(status: number): Promise<number> {
  const res = await fetch(`${router.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const text = await res.text();
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith("switchyard_requests_total{") && line.includes(`status="${status}"`)) sum += Number(line.split(" ").pop());
  return sum;
}

describe("switchyard serve: a client that leaves while its request awaits a pool's object", () => {
  it("is counted as a request that ended 499 when it leaves during its pin's claim", { timeout: 40_000 }, async () => {
    // A fresh isolate waits for the pool's view (one round trip), then claims the client's
    // pin (a second); the client leaves half-way through the claim.
    await expect(chat(AbortSignal.timeout(RTT_MS * 1.5))).rejects.toThrow();
    expect(sent(), "left before anything was sent upstream").toBe(0);
    await expect.poll(() => requestsWithStatus(499), { timeout: 20_000, interval: 500 }).toBe(1);
    expect(sent(), "its engine, reached after the claim, saw the client gone and sent nothing").toBe(0);
  });

  it("gives its half-open probe back when it leaves during the probe's admission, so the next request probes at once, not a deadline and a minute later", { timeout: 60_000 }, async () => {
    // The pin is cached by now: the only object call left on the request's path is the probe's admission.
    upstream.setBehaviour({ status: 500 });
    const failed = await chat();
    expect(failed.status).toBeGreaterThanOrEqual(500);
    await failed.arrayBuffer();
    const before = sent();
    upstream.setBehaviour({});
    // The failure reaches the pool's object within a batch and a round trip; its cooldown
    // then ends there too, so the next request's probe is admitted (and held) by the object.
    await sleep(RTT_MS * 2 + COOLDOWN_MS + 500);
    await expect(chat(AbortSignal.timeout(RTT_MS / 2))).rejects.toThrow();
    expect(sent(), "left before its probe was sent").toBe(before);
    // Held, the probe slot would refuse every request (503, circuits open) for the deadline plus 60 s.
    const until = Date.now() + 20_000;
    let status = 0;
    while (Date.now() < until) {
      const res = await chat();
      status = res.status;
      await res.arrayBuffer();
      if (status === 200) break;
      await sleep(500);
    }
    expect(status).toBe(200);
    expect(sent()).toBe(before + 1);
  });
});
