/**
 * The shared-state client protocol (src/app/state/state-client.ts) against the object
 * side's dedupe (src/core/state/applied-ledger.ts): a client whose payload is a list of
 * numbers, and a stand-in object that sums every number it applies. The stand-in can
 * fail before applying (the object unreachable), or apply and then fail (the answer
 * lost), so what the sum shows is what a real object would count.
 */
import { describe, expect, it } from "vitest";
import { COLD_WAIT_MS, MAX_BATCH_AGE_MS, MAX_UNACKED_BATCHES, StateClient } from "../../src/app/state/state-client";
import { EXCHANGE_GIVEN_UP_MS, heldOpenWithin } from "../../src/app/state/sync-loop";
import type { Acked, Sealed } from "../../src/core/state/batches";
import { AppliedLedger } from "../../src/core/state/applied-ledger";

interface News {
  values: number[];
}
interface View extends Acked {
  sum: number;
}

type Fault = "none" | "unreachable" | "answer_lost" | "hang";

/** An object that sums the values of the batches it applies, once each. */
class SummingObject {
  readonly ledger = new AppliedLedger();
  sum = 0;
  fault: Fault = "none";
  received: number[][] = [];

  async sync(isolate: string, batches: Sealed<News>[]): Promise<View> {
    this.received.push(batches.map((b) => b.seq));
    if (this.fault === "unreachable") throw new Error("object unreachable");
    if (this.fault === "hang") return new Promise(() => {});
    for (const b of this.ledger.accept(isolate, batches, 0)) for (const v of b.values) this.sum += v;
    if (this.fault === "answer_lost") throw new Error("answer lost");
    return { sum: this.sum, acked: this.ledger.applied(isolate) };
  }
}

class SummingClient extends StateClient<News, View> {
  protected readonly what = "test_sync";
  #values: number[] = [];

  constructor(
    private readonly target: SummingObject,
    now?: () => number,
  ) {
    super("test:object", 1_000, now);
  }

  add(value: number): void {
    this.#values.push(value);
  }

  get sum(): number | null {
    return this.view?.sum ?? null;
  }

  get pending(): number[] {
    return this.unacked.map((b) => b.seq);
  }

  protected drain(): News | null {
    if (this.#values.length === 0) return null;
    const news = { values: this.#values };
    this.#values = [];
    return news;
  }

  protected send(batches: Sealed<News>[]): Promise<View> {
    return this.target.sync("isolate-1", batches);
  }
}

const keeper = { waitUntil: () => {} };

describe("the shared-state client protocol", () => {
  it("keeps a batch the object did not take and sends it again with the next exchange (restore on failure)", async () => {
    const object = new SummingObject();
    const client = new SummingClient(object);
    client.add(1);
    object.fault = "unreachable";
    await client.flush();
    expect(client.pending).toEqual([1]);
    client.add(2);
    object.fault = "none";
    await client.flush();
    expect(object.received).toEqual([[1], [1, 2]]);
    expect(object.sum).toBe(3);
    expect(client.pending).toEqual([]);
    expect(client.sum).toBe(3);
  });

  it("counts a batch once when its answer was lost and it is sent again", async () => {
    const object = new SummingObject();
    const client = new SummingClient(object);
    client.add(5);
    object.fault = "answer_lost";
    await client.flush();
    expect(object.sum).toBe(5); // applied
    expect(client.pending).toEqual([1]); // but not known to be
    object.fault = "none";
    client.add(7);
    await client.flush();
    expect(object.received).toEqual([[1], [1, 2]]);
    expect(object.sum).toBe(12);
    expect(client.pending).toEqual([]);
  });

  it("trims exactly the batches the answer acknowledges", async () => {
    const object = new SummingObject();
    const client = new SummingClient(object);
    // An answer that acknowledges batch 1 only (another exchange applied it; 2 and 3 are still on their way).
    object.sync = async (_isolate, batches) => ({ sum: 0, acked: Math.min(1, ...batches.map((b) => b.seq)) });
    client.add(1);
    await client.flush();
    client.add(2);
    await client.flush();
    client.add(3);
    await client.flush();
    expect(client.pending).toEqual([2, 3]);
  });

  it(`keeps at most ${MAX_UNACKED_BATCHES} unacknowledged batches, dropping the oldest`, async () => {
    const object = new SummingObject();
    const client = new SummingClient(object);
    object.fault = "unreachable";
    for (let i = 1; i <= MAX_UNACKED_BATCHES + 5; i++) {
      client.add(i);
      await client.flush();
      expect(client.backlog).toBe(Math.min(i, MAX_UNACKED_BATCHES));
    }
    expect(client.pending[0]).toBe(6);
    object.fault = "none";
    await client.flush();
    expect(object.received.at(-1)).toEqual(Array.from({ length: MAX_UNACKED_BATCHES }, (_, i) => i + 6));
    expect(object.sum).toBe(Array.from({ length: MAX_UNACKED_BATCHES }, (_, i) => i + 6).reduce((a, b) => a + b, 0));
  });

  it("drops a batch unacknowledged for longer than the objects remember an isolate", async () => {
    let now = 1_000_000;
    const object = new SummingObject();
    const client = new SummingClient(object, () => now);
    object.fault = "unreachable";
    client.add(1);
    await client.flush();
    now += MAX_BATCH_AGE_MS;
    client.add(2);
    await client.flush();
    expect(client.pending).toEqual([1, 2]);
    now += 1;
    client.add(3);
    await client.flush();
    expect(client.pending).toEqual([2, 3]);
  });

  it("never lets an older answer replace a newer one", async () => {
    const object = new SummingObject();
    const client = new SummingClient(object);
    const answers: ((view: View) => void)[] = [];
    object.sync = (_isolate, batches) => new Promise((resolve) => answers.push((view) => resolve({ ...view, acked: Math.max(0, ...batches.map((b) => b.seq)) })));
    client.add(1);
    const first = client.flush();
    client.add(2);
    const second = client.flush();
    answers[1]!({ sum: 3, acked: 0 });
    await second;
    answers[0]!({ sum: 1, acked: 0 });
    await first;
    expect(client.sum).toBe(3);
    expect(client.pending).toEqual([]);
  });

  it("waits, in the request that prefetched, for the exchange it started early; another request waits for its own", async () => {
    const object = new SummingObject();
    const client = new SummingClient(object);
    const own = { waitUntil: () => {} };
    client.prefetch(own); // started, not awaited: the request does other work meanwhile
    expect(object.received).toHaveLength(1);
    await client.ready(own);
    expect(object.received).toHaveLength(1);
    expect(client.hasView).toBe(true);

    const cold = new SummingClient(object);
    cold.prefetch(own);
    await cold.ready({ waitUntil: () => {} }); // a promise settled by another request's I/O would resume this one in that one's context
    expect(object.received).toHaveLength(3);
    // With a view, neither starts another.
    cold.prefetch(own);
    await cold.ready(own);
    expect(object.received).toHaveLength(3);
  });

  it(`waits for a first view at most COLD_WAIT_MS (${COLD_WAIT_MS} ms) once: while the object stays silent no later request waits`, async () => {
    const object = new SummingObject();
    object.fault = "hang";
    let now = 0;
    const client = new SummingClient(object, () => now);
    const started = Date.now();
    await client.ready(keeper);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(COLD_WAIT_MS - 50);
    expect(waited).toBeLessThan(COLD_WAIT_MS + 1_000);
    // Requests an interval and more apart: before, one in every COLD_WAIT_MS plus an interval waited its 2 s again.
    for (let i = 0; i < 3; i++) {
      now += 1_500;
      const again = Date.now();
      await client.ready(keeper);
      expect(Date.now() - again, `request ${i + 2}`).toBeLessThan(100);
    }
    expect(client.hasView).toBe(false);
    client.dispose();
  });

  it(`gives up on an exchange that never settles after EXCHANGE_GIVEN_UP_MS (${EXCHANGE_GIVEN_UP_MS} ms): the loop goes on and what it held counts once`, async () => {
    const object = new SummingObject();
    let now = 0;
    const client = new SummingClient(object, () => now);
    await client.ready(keeper);
    expect(client.sum).toBe(0);
    object.fault = "hang"; // the call is taken and never answered, as one whose request context is gone
    client.add(1);
    now += 1_500;
    const hungAt = now;
    client.nudge(keeper);
    await expect.poll(() => object.received.length).toBe(2);
    // While it may still answer, the loop does not overlap it: news waits.
    object.fault = "none";
    client.add(2);
    now += 1_500;
    client.nudge(keeper);
    now = hungAt + EXCHANGE_GIVEN_UP_MS - 1;
    client.nudge(keeper);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(object.received).toHaveLength(2);
    // At the bound, the next request's news starts a fresh exchange, which carries both batches.
    now = hungAt + EXCHANGE_GIVEN_UP_MS;
    client.nudge(keeper);
    await expect.poll(() => client.sum).toBe(3);
    expect(object.received.at(-1)).toEqual([1, 2]);
    expect(object.sum).toBe(3);
    expect(client.pending).toEqual([]);
    client.dispose();
  });

  it("after an unanswered cold wait, the loop keeps asking, one exchange per interval however many requests come, and adopts the object's answer once it returns", async () => {
    const object = new SummingObject();
    object.fault = "unreachable";
    let now = 0;
    const client = new SummingClient(object, () => now);
    await client.ready(keeper);
    expect(client.hasView).toBe(false);
    const asked = object.received.length;
    for (let i = 0; i < 20; i++) await client.ready(keeper); // within one interval: no exchange per request
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(object.received.length - asked).toBeLessThanOrEqual(1);
    object.fault = "none";
    now += 1_500;
    await client.ready(keeper); // does not wait, but its loop's exchange hears the object
    await expect.poll(() => client.hasView, { timeout: 3_000 }).toBe(true); // the exchange the loop scheduled within the interval runs on a real timer
    client.dispose();
  });
});

describe("an object call a request awaits (a pin's claim, a probe's admission)", () => {
  it("is awaited at most its bound, then the request goes on without it, while the call is still held open", async () => {
    const held: Promise<unknown>[] = [];
    const keeper = { waitUntil: (p: Promise<unknown>) => void held.push(p) };
    const started = Date.now();
    await expect(heldOpenWithin(keeper, new Promise(() => {}), 100)).rejects.toThrow("no answer within 100 ms");
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(held).toHaveLength(1); // the call itself stays held, and may still complete
    await expect(heldOpenWithin(keeper, Promise.resolve("pinned"), 100)).resolves.toBe("pinned");
  });
});
