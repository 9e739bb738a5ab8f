/**
 * What a limited graph request used: the sum of every step's own usage, read from each
 * step's answer as it passes (docs/limits.md, "What a request does"). A step that answered
 * is charged the usage its upstream reported; one that reported none, or was cut (a
 * losing ensemble branch, the client leaving, the deadline), its prompt as estimated from
 * the step's body plus the output seen, and the sum is then marked estimated. A step that
 * got no answer costs no tokens, nor does one whose error answer reports no usage. Each
 * step is priced as the model it called: the model its body names when configured, else
 * the graph model's own prices, else the dearest model served by the step's pool. Mirrors and external routers are not steps here: a
 * mirror is the operator's shadow traffic, a router is not a model call.
 */
import type { Config } from "../../core/config/schema";
import type { ServiceCall } from "../../core/graph/executor";
import type { TokenPrices } from "../../core/limits/prices";
import { costOf, FREE, poolPrices, pricesOf } from "../../core/limits/prices";
import { estimatePromptTokens, estimateTokens } from "../../core/routewise/tokens";
import { answeredWithSuccess } from "../../core/upstream/attempts";
import { isJsonObject, parseJson } from "../../lib/json";
import type { PlanObserver } from "../engine/plan";

export interface GraphUse {
  tokens: number;
  spend: number;
  /** Some step's use was estimated, not reported by its upstream. */
  estimated: boolean;
}

export class GraphUsage {
  #use: GraphUse = { tokens: 0, spend: 0, estimated: false };
  #open = 0;
  #runDone = false;
  #told = false;

  /** `done` hears the sum once: when the graph has returned and every step's plan has settled (a streamed tail step's body ended). */
  constructor(
    private readonly config: Config,
    private readonly graphModel: string,
    private readonly done: (use: GraphUse) => void,
  ) {}

  /** A step about to be called: the observer of its plan, and `close` for when its result is in hand (idempotent). */
  step(call: ServiceCall): { observer: PlanObserver; close: () => void } {
    this.#open++;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      this.#open--;
      this.#maybeDone();
    };
    const json = bodyJson(call.body);
    const promptEstimate = json !== null ? estimatePromptTokens(json) : estimateTokens(call.body.byteLength);
    const prices = this.#pricesOf(call, json);
    const observer: PlanObserver = {
      ended: (_a, end) => {
        if (end.attempt.outcome.kind !== "answered") return; // no answer: nothing the upstream counted reached us
        if (!end.won && (end.body === "broken" || end.body === "deadline")) return; // its body broke before any of it was delivered: no answer either
        const usage = end.usage;
        const reported = usage !== null && usage.reported && usage.promptTokens !== null;
        if (!answeredWithSuccess(end.attempt.outcome) && !reported) return; // an error answer is charged only what it reports
        const prompt = usage?.promptTokens ?? promptEstimate;
        const output = usage?.outputTokens ?? 0;
        this.#use.tokens += prompt + output;
        this.#use.spend += costOf(prices, prompt, usage?.cachedTokens ?? 0, output);
        if (!reported || end.body !== "complete") this.#use.estimated = true;
      },
      settled: close,
    };
    return { observer, close };
  }

  /** The graph has returned its result: once its open steps settle, the sum is told. */
  finish(): void {
    this.#runDone = true;
    this.#maybeDone();
  }

  #maybeDone(): void {
    if (this.#told || !this.#runDone || this.#open > 0) return;
    this.#told = true;
    this.done(this.#use);
  }

  #pricesOf(call: ServiceCall, json: Record<string, unknown> | null): TokenPrices {
    const named = typeof json?.model === "string" ? pricesOf(this.config, json.model) : FREE;
    if (named !== FREE) return named;
    const own = pricesOf(this.config, this.graphModel);
    if (own !== FREE) return own;
    return call.target.kind === "pool" ? poolPrices(this.config, call.target.pool) : FREE;
  }
}

const STEP_JSON_MAX_BYTES = 1024 * 1024; // a prompt is far smaller; a bigger step body is estimated by its bytes

/** A graph or step body as a JSON object, or null (not one, or past STEP_JSON_MAX_BYTES): read for the model it names. */
export function bodyJson(body: Uint8Array): Record<string, unknown> | null {
  if (body.byteLength > STEP_JSON_MAX_BYTES) return null;
  const parsed = parseJson(body);
  return parsed.ok && isJsonObject(parsed.value) ? parsed.value : null;
}
