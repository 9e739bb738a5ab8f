/**
 * SLO-aware ordering, the endpoint picker's manner: replicas predicted to meet the
 * request's TTFT objective keep the policy's order and go first; the others follow,
 * soonest predicted first. Without a prediction for every replica (a model still
 * learning) the policy's order stands: no guess is better than a wrong one.
 */
export function sloOrder(order: readonly string[], predictMs: (replica: string) => number | null, objectiveMs: number): string[] {
  const predicted = new Map<string, number>();
  for (const id of order) {
    const ms = predictMs(id);
    if (ms === null) return [...order];
    predicted.set(id, ms);
  }
  const meets = order.filter((id) => predicted.get(id)! <= objectiveMs);
  const misses = order.filter((id) => predicted.get(id)! > objectiveMs).sort((a, b) => predicted.get(a)! - predicted.get(b)!);
  return [...meets, ...misses];
}
