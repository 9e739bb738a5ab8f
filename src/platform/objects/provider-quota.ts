import { DurableObject } from "cloudflare:workers";
import { urlCredentials } from "../../lib/url-credentials";
import type { QuotaExhaustions, QuotaPolled, QuotaSince } from "../../core/routewise/quota-machine";
import { PollError, QuotaMachine } from "../../core/routewise/quota-machine";
import type { QuotaAnswer, QuotaSpec, QuotaState, QuotaSync } from "../../core/routewise/wire";
import { readUpTo } from "../../lib/bounded-read";
import { clock } from "./clock";

/**
 * One provider quota (`quota:<quota_pool or model/route>`), shared by every route that
 * draws on the subscription: the storage and I/O adapter of QuotaMachine
 * (src/core/routewise/quota-machine.ts). The provider's usage API is the truth: it is
 * polled on an alarm every `poll_s`; between polls, the units isolates report using are
 * taken off what the last poll left, so routes in one pool decrement it together. It
 * fails safe: until the first good poll, and once the last good one is older than
 * `stale_after_s`, the quota counts as exhausted.
 *
 * Storage (KV API of the SQLite backend):
 *   "spec"    QuotaSpec of the newest config, for the alarm, with the usage API's credential
 *             replaced by a marker and a URL holding an env value as written (`${VAR}`
 *             unresolved): secrets are never at rest here. After a restart the alarm waits
 *             for the next sync (a request, or the cron within a minute) to bring them.
 *   "polled"  {used, limit, resetAt, at} of the last good poll
 *   "since"   {units, window}: units reported by isolates since that poll, and the reset
 *             ending the window they were used in (past it they no longer count)
 *   "applied:<isolate>"  {seq, at}: the isolate's highest batch seq applied
 *             (src/core/state/applied-ledger.ts), put in the same call as "since", so a
 *             batch whose answer was lost, resent before or after a restart, is taken off
 *             the quota once; deleted once the isolate has been silent APPLIED_TTL_MS
 *   "exhaustions"  {used_up, fail_safe, now}: times the quota became unusable (a counter
 *             /metrics shows) and why it is unusable now, so a restart does not count
 *             it again; put after any call that counted one
 *   "lastError"  why the last poll failed (our own words, never the URL or the key); null
 *             after a good poll
 * Memory only: nothing else.
 */
export class ProviderQuota extends DurableObject {
  #machine = new QuotaMachine();
  #polling: Promise<void> | null = null;
  /** The exhaustion counts as last stored, to put them only when they changed. */
  #exhaustionsStored = "";

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      this.#machine.restore({
        spec: (await ctx.storage.get<QuotaSpec>("spec")) ?? null,
        polled: (await ctx.storage.get<QuotaPolled>("polled")) ?? null,
        since: (await ctx.storage.get<QuotaSince>("since")) ?? null,
        exhaustions: (await ctx.storage.get<QuotaExhaustions>("exhaustions")) ?? null,
        lastError: (await ctx.storage.get<string>("lastError")) ?? null,
      }, clock.now());
      this.#exhaustionsStored = JSON.stringify(this.#machine.exhaustions);
      for (const [key, applied] of await ctx.storage.list<{ seq: number; at: number }>({ prefix: APPLIED_PREFIX })) {
        this.#machine.ledger.restore(key.slice(APPLIED_PREFIX.length), applied.seq, applied.at);
      }
    });
  }

  /** An isolate's batches of usage in, each applied once; the quota as it stands out. The first call for a new spec polls at once. */
  async sync(request: QuotaSync): Promise<QuotaAnswer> {
    await this.#adopt(request.spec);
    const now = clock.now();
    const forgotten = this.#machine.ledger.sweep(now);
    if (forgotten.length > 0) await this.ctx.storage.delete(forgotten.map((isolate) => APPLIED_PREFIX + isolate));
    const { answer, stored } = this.#machine.sync(request, now);
    // One put, so the units and the record of the batches they came from are stored together.
    if (stored) await this.ctx.storage.put({ since: this.#machine.since, [APPLIED_PREFIX + request.isolate]: { seq: answer.acked, at: now } });
    await this.#keepExhaustions();
    return answer;
  }

  /** The quota's terms, told without a request: when a config is published or on the Worker's cron, so it polls before traffic comes. */
  async adopt(spec: QuotaSpec): Promise<QuotaState> {
    await this.#adopt(spec);
    return this.#stateNow();
  }

  async snapshot(): Promise<QuotaState> {
    return this.#stateNow();
  }

  /** The quota now; reading it may count an exhaustion (it is judged as it is read), which is then stored. */
  async #stateNow(): Promise<QuotaState> {
    const state = this.#machine.state(clock.now());
    await this.#keepExhaustions();
    return state;
  }

  async #keepExhaustions(): Promise<void> {
    const counts = JSON.stringify(this.#machine.exhaustions);
    if (counts === this.#exhaustionsStored) return;
    await this.ctx.storage.put("exhaustions", this.#machine.exhaustions);
    this.#exhaustionsStored = counts;
  }

  override async alarm(): Promise<void> {
    const spec = this.#machine.spec;
    if (!spec) return;
    if (!this.#machine.named(clock.now())) return; // no live config names this quota: no more polls with its credential, until one does
    await this.#poll(spec);
    await this.ctx.storage.setAlarm(Date.now() + spec.source.poll_s * 1000);
  }

  async #adopt(spec: QuotaSpec): Promise<void> {
    const rearm = this.#machine.told(clock.now());
    const { changed, poll } = this.#machine.adopt(spec);
    if (rearm && !changed) await this.ctx.storage.setAlarm(Date.now() + spec.source.poll_s * 1000);
    if (changed) {
      // The usage API's credential, and a URL holding an env value, stay in memory: storage gets the spec without them.
      await this.ctx.storage.put("spec", { ...spec, source: { ...spec.source, url: spec.urlAtRest ?? spec.source.url, auth: spec.source.auth === undefined ? undefined : STORED_WITHOUT_AUTH } });
      if (poll) this.#polling = this.#poll(spec).finally(() => (this.#polling = null));
      await this.ctx.storage.setAlarm(Date.now() + spec.source.poll_s * 1000);
    }
    // A call that arrives while the first poll is out (the usage API's fetch lets it in) waits for its answer.
    if (this.#polling) await this.#polling;
  }

  async #poll(spec: QuotaSpec): Promise<void> {
    const source = spec.source;
    const headers: Record<string, string> = { accept: "application/json" };
    if (source.auth === STORED_WITHOUT_AUTH || (spec.urlAtRest !== undefined && source.url === spec.urlAtRest)) {
      // Restarted since the last sync: the next one (a request, or the cron within a minute) brings the credential and the real URL.
      this.#machine.pollFailed("waiting for the usage API's credential or URL from the next sync (the object restarted)");
      return;
    }
    const basic = urlCredentials(source.url);
    if (source.auth) headers.authorization = `Bearer ${source.auth}`;
    else if (basic) headers.authorization = basic.authorization;
    try {
      const response = await fetch(basic?.url ?? source.url, { headers, redirect: "manual", signal: AbortSignal.timeout(source.timeout_ms) });
      if (!response.ok) {
        await response.body?.cancel();
        throw new PollError(`usage API answered HTTP ${response.status}`);
      }
      const bytes = await readUpTo(response.body, response.headers.get("content-length"), MAX_USAGE_ANSWER_BYTES);
      if (bytes === null) throw new PollError(`usage API answer is over ${MAX_USAGE_ANSWER_BYTES} bytes`);
      const body = parseJson(bytes);
      this.#machine.polledAnswer(spec, body, clock.now());
      await this.ctx.storage.put({ polled: this.#machine.polled, since: this.#machine.since, lastError: null });
    } catch (error) {
      // The message is ours or the runtime's (timeout, DNS); never the URL or the key.
      this.#machine.pollFailed(error instanceof PollError ? error.message : (error as Error)?.name === "TimeoutError" ? `usage API did not answer within ${source.timeout_ms} ms` : "usage API could not be reached");
      // Kept, so /routing still says why after the object restarts between polls.
      await this.ctx.storage.put("lastError", this.#machine.lastError);
    }
  }
}

const MAX_USAGE_ANSWER_BYTES = 65_536; // a usage API's answer is a few hundred bytes; past this it is not one, and the object will not hold it

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new PollError("usage API answered something that is not JSON");
  }
}

const STORED_WITHOUT_AUTH = "\u0000stored-without-auth"; // stands in for a credential in storage; no real token looks like it
const APPLIED_PREFIX = "applied:";
