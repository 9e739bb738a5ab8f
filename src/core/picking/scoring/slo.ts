/**
 * SLO-aware ordering, the endpoint picker's manner: replicas predicted to meet every
 * objective of the request keep the policy's order and go first; the others follow, the
 * nearest to meeting them first (least total overshoot, as a fraction of each objective).
 * An objective without a prediction for every replica (a model still learning, metrics
 * stale) is left out: no guess is better than a wrong one. A prediction that is not a
 * finite number (NaN, ±Infinity: a broken model or exporter) counts as none, and every
 * replica given comes back exactly once: an objective reorders, it never removes.
 */
export interface Objective {
  objectiveMs: number;
  predictMs: (replica: string) => number | null;
}

export function sloOrder(order: readonly string[], objectives: readonly Objective[]): string[] {
  return sloRank(order, objectives).order;
}

/** The order, and which replicas are predicted to meet every judged objective (null: none could be judged, so nothing is known either way). */
export function sloRank(order: readonly string[], objectives: readonly Objective[]): { order: string[]; meets: ReadonlySet<string> | null } {
  const judged: { objectiveMs: number; predicted: Map<string, number> }[] = [];
  for (const objective of objectives) {
    const predicted = new Map<string, number>();
    for (const id of order) {
      const ms = objective.predictMs(id);
      if (ms === null || !Number.isFinite(ms)) break;
      predicted.set(id, ms);
    }
    if (predicted.size === order.length) judged.push({ objectiveMs: objective.objectiveMs, predicted });
  }
  if (judged.length === 0) return { order: [...order], meets: null };
  const overshoot = (id: string) => judged.reduce((sum, j) => sum + Math.max(0, j.predicted.get(id)! / j.objectiveMs - 1), 0);
  const meets = order.filter((id) => overshoot(id) === 0);
  const misses = order.filter((id) => overshoot(id) !== 0).sort((a, b) => overshoot(a) - overshoot(b)); // the rest, whatever their numbers
  return { order: [...meets, ...misses], meets: new Set(meets) };
}
