import type { BanditParams, BanditState } from "../../core/graph/bandits";
import { applyFeedback, checkFeedback, chooseArm, initialState, needsReset, normalizeParams } from "../../core/graph/bandits";
import type { BanditFeedback, BanditNews, BanditView } from "../../core/graph/bandit-wire";
import type { Sealed } from "../../core/state/batches";
import type { RandomSource } from "../../lib/random";
import { cryptoRandom } from "../../lib/random";
import type { BanditRpc } from "./stubs";
import { StateClient } from "./state-client";

export const BANDIT_SYNC_MS = 1_000; // a node's arm statistics as this isolate routes by them are at most a second old (plus one round trip) while traffic flows; its own feedback counts at once

/**
 * One isolate's agent for one bandit router node: the shared-state protocol
 * (./state-client.ts) with feedback as payload. Requests choose an arm from the isolate's
 * view of the node's arms, with this isolate's own feedback not yet acknowledged applied
 * on top (`choose`, no object call); feedback is checked here, so a bad one is refused
 * before anything is queued, and reaches the object in the next batch, applied once.
 * Only an isolate's first request for the node waits (bounded) for its arms.
 *
 * Seeded nodes are the exception (src/app/model-call/graph.ts): their reproducible
 * sequence is the object's, so they are chosen by the object, one awaited call per
 * request, and their feedback is flushed before POST /feedback answers.
 */
export class BanditAgent extends StateClient<BanditNews, BanditView> {
  protected readonly what = "bandit_sync";
  #params: BanditParams;
  #feedback: BanditFeedback[] = [];
  /** The view's arms with this isolate's unacknowledged feedback on top (null: not worked out since the last change). */
  #local: BanditState | null = null;
  readonly #random: RandomSource = cryptoRandom();

  constructor(
    private readonly isolate: () => string,
    object: string,
    params: BanditParams,
    private readonly rpc: () => BanditRpc,
    now?: () => number,
  ) {
    super(object, BANDIT_SYNC_MS, now);
    this.#params = normalizeParams(params);
  }

  /** The node's params as the config now says (normalised; a change of shape resets the arms at the object). */
  update(params: BanditParams): void {
    const next = normalizeParams(params);
    if (JSON.stringify(next) === JSON.stringify(this.#params)) return;
    this.#params = next;
    this.#local = null;
  }

  get params(): BanditParams {
    return this.#params;
  }

  get seeded(): boolean {
    return (this.#params.seed ?? null) !== null;
  }

  /** The arm for one request, from this isolate's view; without one (the object unreachable), from the params' initial state. */
  choose(random: RandomSource): number {
    this.#local ??= this.#localState();
    return chooseArm(this.#params, this.#local, random);
  }

  /** Checks one credit (RangeError naming the bad field: the caller's 400) without queueing it. */
  check(feedback: BanditFeedback): void {
    checkFeedback(this.#params, feedback.arm, feedback.reward, feedback.rows);
  }

  /** Queues one credit for the next batch, and counts it in this isolate's choices at once. Throws as `check` does. */
  feedback(feedback: BanditFeedback): void {
    this.check(feedback);
    const f = { arm: feedback.arm, reward: feedback.reward, rows: feedback.rows };
    this.#feedback.push(f);
    if (this.#local) this.#local = applyFeedback(this.#params, this.#local, f.arm, f.reward, f.rows, this.#random);
  }

  protected drain(): BanditNews | null {
    if (this.#feedback.length === 0) return null;
    const news = { feedback: this.#feedback };
    this.#feedback = [];
    return news;
  }

  protected send(batches: Sealed<BanditNews>[]): Promise<BanditView> {
    return this.rpc().sync({ isolate: this.isolate(), params: this.#params, batches });
  }

  protected override adopt(view: BanditView): void {
    this.view = view;
    this.#local = null;
  }

  #localState(): BanditState {
    const view = this.view;
    // A view of other params (the config changed since) says nothing about these arms until the object has reset them.
    let state = view && !needsReset(view.params, this.#params) ? { arms: view.arms, best: view.best } : initialState(this.#params, this.#random);
    for (const f of [...this.unacked.flatMap((b) => b.feedback), ...this.#feedback]) {
      try {
        state = applyFeedback(this.#params, state, f.arm, f.reward, f.rows, this.#random);
      } catch {
        // checked under params since changed: the object will refuse it too
      }
    }
    return state;
  }
}
