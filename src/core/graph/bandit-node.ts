import type { RandomSource } from "../../lib/random";
import { AppliedLedger } from "../state/applied-ledger";
import type { BanditParams, BanditState, BanditStateSnapshot, SeededRandomSource } from "./bandits";
import { applyFeedback, checkFeedback, chooseArm, initialState, needsReset, normalizeParams, seededRandom } from "./bandits";
import type { BanditSync, BanditView } from "./bandit-wire";

/** The node as stored: its params, arms and best arm, the seeded source's position, the time of the last write. */
export interface StoredNode {
  params: BanditParams;
  arms: BanditState;
  draws: number;
  updatedAt: number;
}

/** What one call changed that storage must keep (written in one transaction). */
export interface BanditWrites {
  /** The node row and every arm row changed (the arms were created, reset or credited). */
  arms: boolean;
  /** Only the node row changed (params adopted without a reset, or the seeded source drew). */
  node: boolean;
  /** The isolate whose applied seq goes in the same transaction (null: no batch credited anything). */
  applied: string | null;
  /** Feedback items refused (arm, reward or rows out of bounds for the params), for the log. */
  refused: number;
}

const noWrites = (): BanditWrites => ({ arms: false, node: false, applied: null, refused: 0 });

/**
 * One bandit router node as a pure state machine: its arm statistics under its params,
 * the batches of feedback each isolate has had applied, and, for seeded params, the
 * position of the node's one reproducible random sequence. Randomness without a seed
 * comes from `entropy` (Web Crypto in the object); time is an argument. The object
 * (src/platform/objects/bandit-state.ts) stores what `BanditWrites` names.
 *
 * Params changes. Every call brings the node's params and the machine adopts them. The
 * arms are RESET (zero counts, fresh initial best) when `kind` or `n_branches` changes,
 * or when both old and new params name the branches and the names differ: the old counts
 * would belong to other arms. Other changes (epsilon, prior) keep the counts.
 * `best_branch` is only read when the arms are created. A new `seed` restarts its
 * sequence at position 0. During a rollout that changes the shape, isolates on the old
 * and the new config would reset each other until the rollout completes.
 */
export class BanditNode {
  readonly ledger = new AppliedLedger();
  #current: { params: BanditParams; arms: BanditState; updatedAt: number } | null = null;
  #random: RandomSource;
  #seeded: SeededRandomSource | null = null;

  constructor(private readonly entropy: () => RandomSource) {
    this.#random = entropy();
  }

  /** The node as stored (the object starting). */
  restore(stored: StoredNode): void {
    this.#current = { params: stored.params, arms: stored.arms, updatedAt: stored.updatedAt };
    this.#useRandom(stored.params, stored.draws);
  }

  /** What storage holds of the node now (null before its first use). */
  get stored(): StoredNode | null {
    return this.#current && { ...this.#current, draws: this.#seeded?.position ?? 0 };
  }

  /** The arm for one request, drawn here: what seeded nodes do, so every isolate follows one sequence. Throws RangeError for bad params. */
  choose(params: BanditParams, now: number): { arm: number; writes: BanditWrites } {
    const writes = noWrites();
    const current = this.#adopt(normalizeParams(params), now, writes);
    const before = this.#seeded?.position;
    const arm = chooseArm(current.params, current.arms, this.#random);
    if (this.#seeded && this.#seeded.position !== before) writes.node = true;
    return { arm, writes };
  }

  /**
   * An isolate's batches of feedback, each applied once; the node's arms out. An item the
   * params refuse (the isolate checked it under params since changed) is skipped and
   * counted in `refused`. Throws RangeError for bad params, before anything changes.
   */
  sync(request: BanditSync, now: number): { view: BanditView; writes: BanditWrites } {
    const params = normalizeParams(request.params);
    const writes = noWrites();
    let current = this.#adopt(params, now, writes);
    let credited = false;
    for (const batch of this.ledger.accept(request.isolate, request.batches, now)) {
      for (const f of batch.feedback) {
        try {
          checkFeedback(current.params, f.arm, f.reward, f.rows);
        } catch {
          writes.refused++;
          continue;
        }
        current = { params: current.params, arms: applyFeedback(current.params, current.arms, f.arm, f.reward, f.rows, this.#random), updatedAt: now };
        credited = true;
      }
    }
    if (credited) {
      this.#current = current;
      writes.arms = true;
      writes.applied = request.isolate;
    }
    return { view: { ...snapshotOf(current), acked: this.ledger.applied(request.isolate) }, writes };
  }

  /** The node's state, or null before its first use. */
  snapshot(): BanditStateSnapshot | null {
    return this.#current ? snapshotOf(this.#current) : null;
  }

  /** The state for `params`: as held, with the params updated, or fresh (see the class comment). */
  #adopt(params: BanditParams, now: number, writes: BanditWrites) {
    const current = this.#current;
    if (current && !needsReset(current.params, params)) {
      if (JSON.stringify(current.params) === JSON.stringify(params)) return current;
      if ((current.params.seed ?? null) !== (params.seed ?? null)) this.#useRandom(params, 0);
      this.#current = { ...current, params };
      writes.node = true;
      return this.#current;
    }
    if (!current || (current.params.seed ?? null) !== (params.seed ?? null)) this.#useRandom(params, 0);
    this.#current = { params, arms: initialState(params, this.#random), updatedAt: now };
    writes.arms = true;
    return this.#current;
  }

  #useRandom(params: BanditParams, position: number): void {
    const seed = params.seed ?? null;
    this.#seeded = seed === null ? null : seededRandom(seed, position);
    this.#random = this.#seeded ?? this.entropy();
  }
}

function snapshotOf(current: { params: BanditParams; arms: BanditState; updatedAt: number }): BanditStateSnapshot {
  return {
    params: structuredClone(current.params),
    arms: current.arms.arms.map((a) => ({ ...a })),
    best: current.arms.best,
    updatedAt: current.updatedAt,
  };
}
