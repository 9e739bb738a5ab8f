/**
 * Client for the fake-server fleet (tools/fakes/fleet-control.ts), for tests running inside
 * workerd: plain fetch only, and type-only imports so no Node code is bundled.
 */
import { afterEach, inject } from "vitest";
import type { FakeBehaviour, FakeStats } from "../../tools/fakes/fake-openai-types";
import type { FakeVllmOptions, FakeVllmTuning, VllmRequestRecord, VllmStats } from "../../tools/fakes/fake-vllm-types";
import type { FakeProviderBehaviour, FakeProviderStats, ProviderCall, ProviderRequestRecord, ProviderUsageReport } from "../../tools/fakes/fake-provider-types";

export type { FakeBehaviour, FakeStats, FakeVllmOptions, FakeVllmTuning, VllmRequestRecord, VllmStats };
export type { FakeProviderBehaviour, FakeProviderStats, ProviderCall, ProviderRequestRecord, ProviderUsageReport };

export interface FleetServer {
  id: string;
  /** http://127.0.0.1:PORT */
  url: string;
  /** Replaces (does not merge) the server's behaviour. */
  setBehaviour(b: FakeBehaviour): Promise<void>;
  stats(): Promise<FakeStats>;
  reset(): Promise<void>;
  /** Closes the server and every connection it holds; closing again is a no-op. */
  close(): Promise<void>;
}

async function control<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(inject("fleetUrl") + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`fleet ${method} ${path} -> ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

/**
 * Starts a fake OpenAI server. `id` is a prefix: a random suffix keeps ids unique because
 * every test file shares one fleet. Read the real id from the returned `id`.
 */
export async function spawnServer(behaviour: FakeBehaviour = {}, id = "fake"): Promise<FleetServer> {
  const unique = `${id}-${crypto.randomUUID().slice(0, 8)}`;
  const created = await control<{ id: string; url: string }>("POST", "/servers", { id: unique, behaviour });
  const base = `/servers/${encodeURIComponent(created.id)}`;
  let closed: Promise<void> | undefined;
  return {
    id: created.id,
    url: created.url,
    setBehaviour: async (b) => void (await control("PUT", `${base}/behaviour`, b)),
    stats: () => control<FakeStats>("GET", `${base}/stats`),
    reset: async () => void (await control("POST", `${base}/reset`)),
    // Idempotent: a test may close a server early (ending the requests it holds) and the cleanup close it again.
    close: () => (closed ??= control("DELETE", base).then(() => undefined)),
  };
}

export async function spawnFleet(n: number, behaviour: FakeBehaviour = {}): Promise<FleetServer[]> {
  return Promise.all(Array.from({ length: n }, () => spawnServer(behaviour)));
}

/** Chat completions a fake server (or provider) has received so far, whatever it answered. */
export async function chatRequests(server: { stats(): Promise<{ byPath: Record<string, number> }> }): Promise<number> {
  return (await server.stats()).byPath["/v1/chat/completions"] ?? 0;
}

/** A 127.0.0.1 URL whose port refuses connections. */
export async function deadUrl(): Promise<string> {
  return (await control<{ url: string }>("POST", "/dead-port")).url;
}

/**
 * `servers(behaviours, prefix)` for a test file: spawns one fake server per behaviour
 * (ids `<prefix><i>-…`) and closes every one of them after each test.
 */
export function serversClosedAfterEach(): (behaviours: FakeBehaviour[], prefix: string) => Promise<FleetServer[]> {
  const spawned: FleetServer[] = [];
  afterEach(async () => {
    await Promise.all(spawned.splice(0).map((s) => s.close()));
  });
  return async (behaviours, prefix) => {
    const list = await Promise.all(behaviours.map((b, i) => spawnServer(b, `${prefix}${i}`)));
    spawned.push(...list);
    return list;
  };
}

export interface FleetVllm {
  id: string;
  /** http://127.0.0.1:PORT */
  url: string;
  /** Counters, KV and LoRA state, and a record per request (arrival, start, first token, cached tokens, end). */
  stats(): Promise<VllmStats>;
  /** Changes costs or health on the running replica; absent fields keep their value. */
  tune(t: FakeVllmTuning): Promise<void>;
  /** Clears the records; the prefix cache and the counters stay. */
  reset(): Promise<void>;
  /** Closes the replica and cuts its requests; closing again is a no-op. */
  close(): Promise<void>;
}

/**
 * Starts a fake vLLM replica (tools/fakes/fake-vllm.ts): prefix KV cache, queue and LoRA
 * slots modelled, vLLM's /metrics. `id` is a prefix, made unique as for spawnServer.
 */
export async function spawnVllm(options: Omit<FakeVllmOptions, "id" | "port"> = {}, id = "vllm"): Promise<FleetVllm> {
  const unique = `${id}-${crypto.randomUUID().slice(0, 8)}`;
  const created = await control<{ id: string; url: string }>("POST", "/vllm-servers", { id: unique, options });
  const base = `/vllm-servers/${encodeURIComponent(created.id)}`;
  let closed: Promise<void> | undefined;
  return {
    id: created.id,
    url: created.url,
    stats: () => control<VllmStats>("GET", `${base}/stats`),
    tune: async (t) => void (await control("PUT", `${base}/tuning`, t)),
    reset: async () => void (await control("POST", `${base}/reset`)),
    close: () => (closed ??= control("DELETE", base).then(() => undefined)),
  };
}

/** `replicas(n, options, prefix)` for a test file: spawns fake vLLM replicas and closes them after each test. */
export function vllmClosedAfterEach(): (n: number, options?: Omit<FakeVllmOptions, "id" | "port">, prefix?: string) => Promise<FleetVllm[]> {
  const spawned: FleetVllm[] = [];
  afterEach(async () => {
    await Promise.all(spawned.splice(0).map((s) => s.close()));
  });
  return async (n, options = {}, prefix = "vllm") => {
    const list = await Promise.all(Array.from({ length: n }, (_, i) => spawnVllm(options, `${prefix}${i}`)));
    spawned.push(...list);
    return list;
  };
}

export interface FleetProvider {
  id: string;
  /** http://127.0.0.1:PORT; its usage API is `${url}/usage` (or `${url}/v1/usage`). */
  url: string;
  /** Replaces (does not merge) the behaviour and restarts its PRNG from the behaviour's seed. */
  setBehaviour(b: FakeProviderBehaviour): Promise<void>;
  /** Sets the tokens used in the current quota window, as another consumer of the subscription would. */
  setUsed(used: number): Promise<void>;
  /** Counters (peakInFlight, aborted, rateLimited, tokens…), the quota window and the last 50 requests. */
  stats(): Promise<FakeProviderStats>;
  /** Clears the counters and records; quota use and the prompt cache stay. */
  reset(): Promise<void>;
  /** Closes the provider and cuts its requests; closing again is a no-op. */
  close(): Promise<void>;
}

/**
 * Starts a fake metered provider (tools/fakes/fake-provider.ts): TTFT with a seeded slow tail,
 * pace per token, concurrency limit, token quota with a usage API. `id` is a prefix, made
 * unique as for spawnServer.
 */
export async function spawnProvider(behaviour: FakeProviderBehaviour = {}, id = "provider"): Promise<FleetProvider> {
  const unique = `${id}-${crypto.randomUUID().slice(0, 8)}`;
  const created = await control<{ id: string; url: string }>("POST", "/providers", { id: unique, behaviour });
  const base = `/providers/${encodeURIComponent(created.id)}`;
  let closed: Promise<void> | undefined;
  return {
    id: created.id,
    url: created.url,
    setBehaviour: async (b) => void (await control("PUT", `${base}/behaviour`, b)),
    setUsed: async (used) => void (await control("PUT", `${base}/used`, { used })),
    stats: () => control<FakeProviderStats>("GET", `${base}/stats`),
    reset: async () => void (await control("POST", `${base}/reset`)),
    close: () => (closed ??= control("DELETE", base).then(() => undefined)),
  };
}

/** `providers(behaviours, prefix)` for a test file: spawns one fake provider per behaviour (ids `<prefix><i>-…`) and closes them after each test. */
export function providersClosedAfterEach(): (behaviours: FakeProviderBehaviour[], prefix?: string) => Promise<FleetProvider[]> {
  const spawned: FleetProvider[] = [];
  afterEach(async () => {
    await Promise.all(spawned.splice(0).map((s) => s.close()));
  });
  return async (behaviours, prefix = "provider") => {
    const list = await Promise.all(behaviours.map((b, i) => spawnProvider(b, `${prefix}${i}`)));
    spawned.push(...list);
    return list;
  };
}
