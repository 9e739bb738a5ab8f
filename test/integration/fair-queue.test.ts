/**
 * The fair queue through the whole router in workerd: with a pool's `queue` on, a request
 * that would get 429 because every replica is at max_ongoing_requests waits in its
 * isolate's queue for a slot instead, bounded in number and time, in priority order and
 * round robin across tenants (client keys). The replica is a slow fake OpenAI server.
 */
import { describe, expect, it } from "vitest";
import { serversClosedAfterEach } from "../support/fleet";
import type { FleetServer } from "../support/fleet";
import { ADMIN_TOKEN, openAIErrorOf, publish, routerFetch } from "../support/router";

const servers = serversClosedAfterEach();

const uniquePool = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;
const POLL = { timeout: 10_000, interval: 20 };

async function slowPool(latencyMs: number, queue: string, extra = "") {
  const [slow] = await servers([{ latencyMs }], "fq-");
  const pool = uniquePool("fq");
  await publish(
    `models:\n  m: { pool: ${pool} }\n  batch: { pool: ${pool}, priority: sheddable }\n  vip: { pool: ${pool}, priority: critical }\n` +
      `pools:\n  ${pool}:\n    max_ongoing_requests: 1\n    shed_retry_after_s: 2\n    queue: ${queue}\n${extra}    replicas:\n      - { id: s, url: "${slow!.url}" }\n` +
      `routing: { affinity: { enabled: false } }\n`,
  );
  return slow!;
}

/** A chat whose prompt names it, so the fake server's record tells the requests apart. */
function send(label: string, init: { bearer?: string; model?: string; signal?: AbortSignal } = {}): Promise<Response> {
  return routerFetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...(init.bearer ? { authorization: `Bearer ${init.bearer}` } : {}) },
    body: JSON.stringify({ model: init.model ?? "m", messages: [{ role: "user", content: label }] }),
    signal: init.signal,
  });
}

/** Requests waiting in this isolate's queue for model m's pool (GET /routing). */
async function queued(): Promise<number> {
  const view = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { models: Record<string, { queued_here: number }> };
  return view.models.m!.queued_here;
}

/** Status and body, read at once (a body left unread holds its request open). */
const read = async (r: Response) => ({ status: r.status, body: await r.text() });

const chats = async (s: FleetServer) => (await s.stats()).byPath["/v1/chat/completions"] ?? 0;

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

  it("with the queue full the next request gets 429 at once; critical requests never queue", async () => {
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

    const vip = await send("vip", { model: "vip" });
    expect(vip.status).toBe(200); // critical: past the cap, past the queue
    await vip.text();

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
    const slow = await slowPool(400, "{ max_waiting: 10, ttl_ms: 60000 }");
    const pending: Promise<Response>[] = [send("A1", { bearer: "sk-tenant-a" })];
    await expect.poll(() => chats(slow), POLL).toBe(1);
    for (const [i, label] of ["A2", "A3", "A4"].entries()) {
      pending.push(send(label, { bearer: "sk-tenant-a" }));
      await expect.poll(queued, POLL).toBe(i + 1);
    }
    pending.push(send("B1", { bearer: "sk-tenant-b" }));
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
});
