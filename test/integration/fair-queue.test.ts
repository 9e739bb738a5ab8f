/**
 * The fair queue through the whole router in workerd: with a pool's `queue` on, a request
 * that would get 429 because every replica is at max_ongoing_requests waits in its
 * isolate's queue for a slot instead, bounded in number and time, in priority order and
 * round robin across tenants (client keys). The replica is a slow fake OpenAI server.
 */
import { describe, expect, it } from "vitest";
import { chatRequests as chats, serversClosedAfterEach } from "../support/fleet";
import type { FleetServer } from "../support/fleet";
import { ADMIN_TOKEN, openAIErrorOf, publish, routerFetch } from "../support/router";

const servers = serversClosedAfterEach();

const uniquePool = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;
const POLL = { timeout: 10_000, interval: 20 };

async function slowPool(latencyMs: number, queue: string, extra = "", maxOngoing = 1) {
  const [slow] = await servers([{ latencyMs }], "fq-");
  const pool = uniquePool("fq");
  await publish(
    `models:\n  m: { pool: ${pool} }\n  batch: { pool: ${pool}, priority: sheddable }\n  vip: { pool: ${pool}, priority: critical }\n` +
      `pools:\n  ${pool}:\n    max_ongoing_requests: ${maxOngoing}\n    shed_retry_after_s: 2\n    queue: ${queue}\n${extra}    replicas:\n      - { id: s, url: "${slow!.url}" }\n` +
      `routing: { affinity: { enabled: false } }\n`,
  );
  return slow!;
}

/** A chat whose prompt names it, so the fake server's record tells the requests apart. `ip`: the client address Cloudflare would set. */
function send(label: string, init: { bearer?: string; ip?: string; model?: string; signal?: AbortSignal } = {}): Promise<Response> {
  return routerFetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...(init.bearer ? { authorization: `Bearer ${init.bearer}` } : {}), ...(init.ip ? { "cf-connecting-ip": init.ip } : {}) },
    body: JSON.stringify({ model: init.model ?? "m", messages: [{ role: "user", content: label }] }),
    signal: init.signal,
  });
}

/** Model m's pool in this isolate (GET /routing): requests waiting now, and requests that ever waited. */
async function room(): Promise<{ queued_here: number; waited_here: number }> {
  const view = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { models: Record<string, { queued_here: number; waited_here: number }> };
  const { queued_here, waited_here } = view.models.m!;
  return { queued_here, waited_here };
}

/** Requests waiting in this isolate's queue for model m's pool (GET /routing). */
const queued = async (): Promise<number> => (await room()).queued_here;

/** Status and body, read at once (a body left unread holds its request open). */
const read = async (r: Response) => ({ status: r.status, body: await r.text() });

/** The labels of the chats the server received, in arrival order, with their arrival times. */
async function arrivals(s: FleetServer): Promise<{ label: string; at: number }[]> {
  return (await s.stats()).recent
    .filter((r) => r.path === "/v1/chat/completions")
    .map((r) => ({ label: (JSON.parse(r.body) as { messages: { content: string }[] }).messages[0]!.content, at: r.at }));
}

describe("fair queue (pool `queue`)", () => {
  it("a standard request over max_ongoing_requests waits and is served once the first finishes, not refused", async () => {
    const slow = await slowPool(1_500, "{ max_waiting: 4, ttl_ms: 30000 }");
    const first = send("first");
    await expect.poll(() => chats(slow), POLL).toBe(1);
    const second = send("second");
    await expect.poll(queued, POLL).toBe(1);
    expect(await chats(slow)).toBe(1); // it waits in the router, not at the replica

    const [r1, r2] = await Promise.all([first.then(read), second.then(read)]);
    expect(r1.status).toBe(200);
    expect(r2.status).toBe(200);
    const seen = await arrivals(slow);
    expect(seen.map((a) => a.label)).toEqual(["first", "second"]);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1_000); // sent only after the first's 1.5 s answer freed the slot
    expect(await queued()).toBe(0);
  });

  it("with the queue full the next request gets 429 at once", async () => {
    const slow = await slowPool(3_000, "{ max_waiting: 1, ttl_ms: 30000 }");
    const first = send("first");
    await expect.poll(() => chats(slow), POLL).toBe(1);
    const second = send("second");
    await expect.poll(queued, POLL).toBe(1);

    const third = await send("third");
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).toBe("2");
    expect(await openAIErrorOf(third)).toMatchObject({ code: "pool_saturated" });
    expect((await slow.stats()).completed).toBe(0); // answered while the first was still running

    const [r1, r2] = await Promise.all([first, second]);
    expect([r1.status, r2.status]).toEqual([200, 200]);
    await Promise.all([r1.text(), r2.text()]);
  });

  it("a waiter not admitted within ttl_ms gets 429 with Retry-After in the OpenAI error shape", async () => {
    const slow = await slowPool(4_000, "{ max_waiting: 4, ttl_ms: 300 }");
    const first = send("first");
    await expect.poll(() => chats(slow), POLL).toBe(1);
    const startedAt = Date.now();
    const late = await send("late");
    expect(late.status).toBe(429);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(250); // it waited (about ttl_ms) before the refusal
    expect(late.headers.get("retry-after")).toBe("2");
    const error = await openAIErrorOf(late);
    expect(error).toMatchObject({ code: "pool_saturated", type: expect.any(String) });
    expect(error.message).toContain("max_ongoing_requests");
    expect((await slow.stats()).completed).toBe(0);
    expect(await queued()).toBe(0);
    const r1 = await first;
    expect(r1.status).toBe(200);
    await r1.text();
    expect(await chats(slow)).toBe(1); // the refused waiter never reached the replica
  });

  it("a client that leaves while queued is taken out at once and never leases or reaches the replica", async () => {
    const slow = await slowPool(2_000, "{ max_waiting: 4, ttl_ms: 30000 }");
    const first = send("first");
    await expect.poll(() => chats(slow), POLL).toBe(1);
    const gone = new AbortController();
    const leaving = send("leaving", { signal: gone.signal });
    await expect.poll(queued, POLL).toBe(1);
    gone.abort();
    await expect(leaving).rejects.toThrow();
    await expect.poll(queued, POLL).toBe(0);

    const r1 = await first;
    expect(r1.status).toBe(200);
    await r1.text();
    // After the slot freed (release, then a view refresh or two), a later request is served and the one that left never was.
    const after = await send("after");
    expect(after.status).toBe(200);
    await after.text();
    expect((await arrivals(slow)).map((a) => a.label)).toEqual(["first", "after"]);
  });

  it("serves tenants in turn: tenant B's one request goes before tenant A's later ones", async () => {
    // Without client keys a tenant is its client address (a bearer proves nothing); see the key test below for keys.
    const slow = await slowPool(400, "{ max_waiting: 10, max_waiting_per_tenant: 10, ttl_ms: 60000 }");
    const pending: Promise<Response>[] = [send("A1", { ip: "203.0.113.1" })];
    await expect.poll(() => chats(slow), POLL).toBe(1);
    for (const [i, label] of ["A2", "A3", "A4"].entries()) {
      pending.push(send(label, { ip: "203.0.113.1" }));
      await expect.poll(queued, POLL).toBe(i + 1);
    }
    pending.push(send("B1", { ip: "203.0.113.2" }));
    await expect.poll(queued, POLL).toBe(4);

    const responses = await Promise.all(pending.map(async (p) => {
      const r = await p;
      await r.text();
      return r.status;
    }));
    expect(responses).toEqual([200, 200, 200, 200, 200]);
    // A1 was running and A2 first in line when B arrived; then the tenants take turns.
    expect((await arrivals(slow)).map((a) => a.label)).toEqual(["A1", "A2", "B1", "A3", "A4"]);
  });

  it("serves standard waiters before sheddable ones that queued earlier", async () => {
    const slow = await slowPool(400, "{ max_waiting: 10, ttl_ms: 60000 }");
    const pending: Promise<Response>[] = [send("first")];
    await expect.poll(() => chats(slow), POLL).toBe(1);
    pending.push(send("shed", { model: "batch" }));
    await expect.poll(queued, POLL).toBe(1);
    pending.push(send("std"));
    await expect.poll(queued, POLL).toBe(2);
    const statuses = await Promise.all(pending.map(async (p) => {
      const r = await p;
      await r.text();
      return r.status;
    }));
    expect(statuses).toEqual([200, 200, 200]);
    expect((await arrivals(slow)).map((a) => a.label)).toEqual(["first", "std", "shed"]);
  });

  it("below capacity nothing waits; after an overload burst the queue drains at the replica's pace and serves every waiter", async () => {
    const slow = await slowPool(150, "{ max_waiting: 16, max_waiting_per_tenant: 16, ttl_ms: 30000 }", "", 2);
    // Below capacity: rounds of 2 concurrent requests against max_ongoing_requests 2.
    for (let round = 0; round < 5; round++) {
      const statuses = await Promise.all([0, 1].map(async (i) => (await read(await send(`calm-${round}-${i}`))).status));
      expect(statuses).toEqual([200, 200]);
    }
    expect(await room()).toEqual({ queued_here: 0, waited_here: 0 });
    // A burst of 10 at once: 2 go, 8 wait, and every one is served within its ttl, never more than 2 at the replica.
    const burst = await Promise.all(Array.from({ length: 10 }, async (_, i) => (await read(await send(`burst-${i}`))).status));
    expect(burst).toEqual(Array(10).fill(200));
    expect(await room()).toEqual({ queued_here: 0, waited_here: 8 });
    expect((await slow.stats()).peakInFlight).toBe(2);
    // Once it has drained, requests below capacity go straight through again (the queue does not latch).
    for (let round = 0; round < 3; round++) {
      const statuses = await Promise.all([0, 1].map(async (i) => (await read(await send(`after-${round}-${i}`))).status));
      expect(statuses).toEqual([200, 200]);
    }
    expect(await room()).toEqual({ queued_here: 0, waited_here: 8 });
  });

  it("one client cannot fill the queue, not even with a fresh bearer per request: another client is still queued and served", async () => {
    const slow = await slowPool(300, "{ max_waiting: 8, ttl_ms: 30000 }"); // per tenant: the default quarter, 2
    const first = send("first", { ip: "198.51.100.7" });
    await expect.poll(() => chats(slow), POLL).toBe(1);
    const flood = Array.from({ length: 10 }, (_, i) => send(`flood-${i}`, { ip: "198.51.100.7", bearer: `sk-made-up-${i}` }).then(read));
    await expect.poll(queued, POLL).toBe(2);
    const others = [send("other-1", { ip: "192.0.2.9" }).then(read), send("other-2", { ip: "192.0.2.9" }).then(read)];
    await expect.poll(queued, POLL).toBe(4);
    expect((await Promise.all(others)).map((r) => r.status)).toEqual([200, 200]);
    const flooded = (await Promise.all(flood)).map((r) => r.status);
    expect(flooded.filter((s) => s === 429)).toHaveLength(8);
    expect(flooded.filter((s) => s === 200)).toHaveLength(2);
    expect((await read(await first)).status).toBe(200);
  });

  it("a critical flood stays within max_ongoing_requests and its share: standard requests are still served", async () => {
    const slow = await slowPool(300, "{ max_waiting: 32, max_waiting_per_tenant: 32, ttl_ms: 30000 }", "", 2);
    const vips = Array.from({ length: 12 }, (_, i) => send(`vip-${i}`, { model: "vip", ip: "198.51.100.1" }).then(read));
    await expect.poll(queued, POLL).toBe(11); // critical_share 0.5 of 2 slots: one critical in flight, the rest wait first in line
    const standard = [send("std-1", { ip: "192.0.2.1" }).then(read), send("std-2", { ip: "192.0.2.1" }).then(read)];
    expect((await Promise.all(standard)).map((r) => r.status)).toEqual([200, 200]);
    expect((await Promise.all(vips)).map((r) => r.status)).toEqual(Array(12).fill(200));
    expect((await slow.stats()).peakInFlight).toBeLessThanOrEqual(2);
    const labels = (await arrivals(slow)).map((a) => a.label);
    expect(labels.indexOf("std-2")).toBeLessThan(labels.indexOf("vip-11")); // served within the bound, not after the flood
  });

  it("with the queue off a critical request past the cap gets the 429 instead of overloading the replica", async () => {
    const slow = await slowPool(400, "{ max_waiting: 0 }", "    critical_share: 1\n", 2);
    const statuses = (await Promise.all(Array.from({ length: 5 }, (_, i) => send(`vip-${i}`, { model: "vip" }).then(read)))).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
    expect((await slow.stats()).peakInFlight).toBe(2);
  });
});
