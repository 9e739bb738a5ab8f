/**
 * Helpers for tests of the shared routing state: unique pools (Durable Object state lives
 * for the whole test file), a controllable clock, and readers for /metrics.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { clock } from "../../src/platform/objects/clock";
import { affinityKey, shardOf } from "../../src/app/state/affinity-key";
import { poolObjectName, shardObjectName } from "../../src/app/state/object-names";
import type { PoolSnapshot } from "../../src/core/pool/wire";
import { ADMIN_TOKEN, routerFetch } from "./router";

export interface ReplicaLine {
  id: string;
  url: string;
  weight?: number;
}

/** A config with one model on one uniquely named pool. */
export function statefulConfig(opts: { model?: string; replicas: ReplicaLine[]; pool?: string; poolExtra?: string; routing?: string }) {
  const pool = opts.pool ?? `pool-${crypto.randomUUID().slice(0, 8)}`;
  const model = opts.model ?? "m";
  const replicas = opts.replicas.map((r) => `      - { id: ${r.id}, url: "${r.url}", weight: ${r.weight ?? 1} }`).join("\n");
  const yaml = `models:\n  ${model}: { pool: ${pool} }\npools:\n  ${pool}:\n${opts.poolExtra ? `    ${opts.poolExtra}\n` : ""}    replicas:\n${replicas}\n${opts.routing ? `routing: ${opts.routing}\n` : ""}`;
  return { yaml, pool, model };
}

/** Freezes the Durable Objects' clock at `start` and returns a handle to move it. */
export function frozenClock(start = Date.now()) {
  let now = start;
  clock.now = () => now;
  return {
    advance(ms: number) {
      now += ms;
    },
    get now() {
      return now;
    },
    restore() {
      clock.now = () => Date.now();
    },
  };
}

/**
 * Moves the domain clock 10 s to 70 s ahead, to 10 s into a UTC minute, and lets it run
 * on at real speed: a test's per-minute windows then hold for its next 50 s, where a
 * minute ending between its requests and its reads would compare two windows. Forward
 * only, as time can pass between tests; `restore` goes back to Date.now().
 */
export function earlyInMinute() {
  let offset = 70_000 - (Date.now() % 60_000);
  clock.now = () => Date.now() + offset;
  return {
    advance(ms: number) {
      offset += ms;
    },
    get now() {
      return clock.now();
    },
    restore() {
      clock.now = () => Date.now();
    },
  };
}

export async function metricsText(): Promise<string> {
  const res = await routerFetch("/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${await res.text()}`);
  return res.text();
}

/** The value of one sample, matching every given label; 0 when absent. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

export async function affinityEvents(model: string): Promise<Record<string, number>> {
  const text = await metricsText();
  const events = ["hit", "miss", "created", "expired", "dropped_error", "dropped_unavailable"];
  return Object.fromEntries(events.map((event) => [event, metricValue(text, "routing_affinity_events_total", { event, model })]));
}

export async function shardStubFor(bearer: string) {
  const key = await affinityKey(new Request("https://x"), bearer);
  return { key, stub: env.AFFINITY.getByName(shardObjectName(await shardOf(key))) };
}

export const poolStub = (pool: string) => env.POOL_STATE.getByName(poolObjectName(pool));

/**
 * Runs the pool object's alarm (runDurableObjectAlarm), then waits for the health checks
 * and scrapes it started, which run on their own rather than inside the alarm. True when
 * an alarm was set, as runDurableObjectAlarm answers.
 */
export async function runPoolAlarm(stub: ReturnType<typeof poolStub>): Promise<boolean> {
  const ran = await runDurableObjectAlarm(stub);
  await stub.checksSettled();
  return ran;
}

/**
 * The pool object's snapshot once `ready` holds, polling: this isolate's pending reports
 * are flushed first (GET /metrics does), and a report still being settled in another
 * request's waitUntil is waited for. Returns the last snapshot if it never holds.
 */
export async function poolWhen(pool: string, ready: (snap: PoolSnapshot) => boolean, timeoutMs = 3_000): Promise<PoolSnapshot> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    await metricsText();
    const snap = await poolStub(pool).snapshot();
    if (ready(snap) || Date.now() >= until) return snap;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Requests the pool's object has counted, over every model, replica and status. */
export const requestsCounted = (snap: PoolSnapshot): number => snap.requests.reduce((n, s) => n + s.value, 0);

/** The pool's state once it has counted `n` requests (see poolWhen). */
export const poolAfter = (pool: string, n: number): Promise<PoolSnapshot> => poolWhen(pool, (snap) => requestsCounted(snap) >= n);
