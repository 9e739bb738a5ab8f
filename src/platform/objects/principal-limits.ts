import { DurableObject } from "cloudflare:workers";
import type { AllowanceState } from "../../core/limits/allowance";
import { Allowance } from "../../core/limits/allowance";
import type { LimitAnswer, LimitSnapshot, LimitSync } from "../../core/limits/wire";
import { clock } from "./clock";

/**
 * One limit bucket (`limits:<scope>`: a key, a team or a model, or a key or team on one
 * model, per tenant where the rule says): the storage adapter of Allowance
 * (src/core/limits/allowance.ts), which holds the arithmetic. Isolates hold grants of
 * what is left and spend them with no call per request (src/app/state/limits/limit-agent.ts);
 * every sync reports what was spent since and asks for the grant wanted from now.
 *
 * Storage (KV API of the SQLite backend), one put per sync that carried anything:
 *   "state"  AllowanceState: the limits last told, and per dimension its window id and
 *            end, what was spent in it, and every isolate's grant {amount, expiresAt}.
 *            Grants are stored so that a restarted object does not hand out again what
 *            isolates still hold; an expired one is dropped at the next sync. With them
            the bucket's counters for /metrics (requests, tokens, spend, refusals by
            dimension since first use), put in the same write as the batch they came from.
 *   "applied:<isolate>"  {seq, at}: the isolate's highest batch applied
 *            (src/core/state/applied-ledger.ts), put with "state", so a batch whose answer
 *            was lost counts once, before or after a restart; deleted once the isolate has
 *            been silent APPLIED_TTL_MS.
 * No key is stored: the object's name and state hold config names only.
 *
 * Sharding: one object per bucket. Its load is one sync per isolate per LIMITS_SYNC_MS
 * while that isolate has traffic for the bucket, plus a call when an isolate's grant runs
 * short, not one per request; a bucket busier than one object can answer is split by
 * giving its key per-tenant limits or several keys.
 */
export class PrincipalLimits extends DurableObject {
  #allowance = new Allowance();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      this.#allowance.restore((await ctx.storage.get<AllowanceState>("state")) ?? null);
      for (const [key, applied] of await ctx.storage.list<{ seq: number; at: number }>({ prefix: APPLIED_PREFIX })) {
        this.#allowance.ledger.restore(key.slice(APPLIED_PREFIX.length), applied.seq, applied.at);
      }
    });
  }

  /** An isolate's usage in, each batch applied once; its grant for the time to come out. */
  async sync(request: LimitSync): Promise<LimitAnswer> {
    const now = clock.now();
    const forgotten = this.#allowance.ledger.sweep(now);
    if (forgotten.length > 0) await this.ctx.storage.delete(forgotten.map((isolate) => APPLIED_PREFIX + isolate));
    const answer = this.#allowance.sync(request, now);
    // One put: the spend, the grants and the record of the batches they came from, together.
    await this.ctx.storage.put({ state: this.#allowance.state, [APPLIED_PREFIX + request.isolate]: { seq: answer.acked, at: now } });
    return answer;
  }

  async snapshot(): Promise<LimitSnapshot> {
    return this.#allowance.snapshot(clock.now());
  }
}

const APPLIED_PREFIX = "applied:";
