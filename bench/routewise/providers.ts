/**
 * The fake metered providers every row routes over (tools/fakes/fake-provider.ts), in the
 * bench's Node process on 127.0.0.1, fresh for every row. What each one costs is defined
 * here once: the router's config is written from it, and the bench prices the providers'
 * own token counts with it.
 */
import type { FakeProvider, FakeProviderBehaviour } from "../../tools/fakes/fake-provider";
import type { Options } from "./options";

/** Currency per token, as the RouteWise config's `pricing` takes it. */
export interface Price {
  input: number;
  output: number;
}

export const PROVIDER_IDS = ["cheap", "fast", "sub", "slots"] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

export interface ProviderSpec {
  id: ProviderId;
  type: "on_demand" | "quota" | "concurrency";
  /** Null: nothing is paid per token (a prepaid quota, an unpriced slot subscription). */
  price: Price | null;
  behaviour: FakeProviderBehaviour;
  /** One line for the report. */
  about: string;
}

const PER_MILLION = 1e-6;
const OUTPUT_TOKENS = 10_000; // more than any request asks for: every answer is exactly its max_tokens

/**
 * - `cheap`: pay per token, $0.50 / $1.50 per million (input / output); 150 ms to first
 *   token, but 10% of requests (seeded) wait 1.5 s first: the heavy tail hedging is for.
 * - `fast`: 10x the price, $5 / $15 per million; 25 ms to first token, 2 ms a token.
 * - `sub`: a prepaid subscription, free per token, `quotaTokens` per `quotaWindowS`
 *   fixed window, reported at GET /usage; past it, 429 insufficient_quota until reset.
 * - `slots`: reserved capacity, free per token, `slots` requests at once; one more gets
 *   429 concurrency_limit_exceeded.
 */
export function providerSpecs(o: Pick<Options, "seed" | "quotaWindowS" | "quotaTokens" | "slots">): ProviderSpec[] {
  const seed = (i: number) => o.seed * 16 + i; // one stream per provider, all moved by --seed
  return [
    {
      id: "cheap",
      type: "on_demand",
      price: { input: 0.5 * PER_MILLION, output: 1.5 * PER_MILLION },
      behaviour: { ttftMs: 150, jitterMs: 50, slowFraction: 0.1, slowTtftMs: 1500, msPerToken: 6, outputTokens: OUTPUT_TOKENS, seed: seed(1) },
      about: "on_demand, $0.50 / $1.50 per M tokens (in / out); TTFT 150-200 ms, 10% of requests 1.5 s; 6 ms a token",
    },
    {
      id: "fast",
      type: "on_demand",
      price: { input: 5 * PER_MILLION, output: 15 * PER_MILLION },
      behaviour: { ttftMs: 25, jitterMs: 10, msPerToken: 2, outputTokens: OUTPUT_TOKENS, seed: seed(2) },
      about: "on_demand, $5 / $15 per M tokens (10x cheap); TTFT 25-35 ms; 2 ms a token",
    },
    {
      id: "sub",
      type: "quota",
      price: null,
      behaviour: { ttftMs: 80, jitterMs: 30, msPerToken: 4, outputTokens: OUTPUT_TOKENS, quotaLimit: o.quotaTokens, quotaWindowMs: o.quotaWindowS * 1000, seed: seed(3) },
      about: `quota, prepaid (free per token): ${o.quotaTokens} tokens per ${o.quotaWindowS} s fixed window, GET /usage; TTFT 80-110 ms; 4 ms a token`,
    },
    {
      id: "slots",
      type: "concurrency",
      price: null,
      behaviour: { ttftMs: 60, jitterMs: 20, msPerToken: 3, outputTokens: OUTPUT_TOKENS, concurrencyLimit: o.slots, seed: seed(4) },
      about: `concurrency, reserved (free per token): ${o.slots} requests at once; TTFT 60-80 ms; 3 ms a token`,
    },
  ];
}

export interface Providers {
  byId: Map<ProviderId, FakeProvider>;
  close(): Promise<void>;
}

export async function startProviders(specs: readonly ProviderSpec[]): Promise<Providers> {
  const { startFakeProvider } = await import("../../tools/fakes/fake-provider");
  const started = await Promise.allSettled(specs.map((s) => startFakeProvider({ id: s.id, behaviour: s.behaviour })));
  const up = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const close = async () => void (await Promise.allSettled(up.map((p) => p.close())));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    await close();
    throw failed.reason;
  }
  return { byId: new Map(up.map((p) => [p.id as ProviderId, p])), close };
}
