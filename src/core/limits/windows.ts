import type { WindowKind } from "./wire";

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
export const NEVER = Number.MAX_SAFE_INTEGER; // a window that does not end (concurrency; a fixed budget past its reset)

/**
 * The window `now` falls in: an id that changes when the window rolls over, and when the
 * window ends. Calendar windows are UTC. A fixed budget is one window until `resetAt`
 * and a second, never-ending one after it (the budget starts afresh once).
 */
export function windowAt(kind: WindowKind, now: number, resetAt?: number): { id: number; endsAt: number } {
  switch (kind) {
    case "minute":
      return fixedLength(now, MINUTE_MS);
    case "hour":
      return fixedLength(now, HOUR_MS);
    case "day":
      return fixedLength(now, DAY_MS);
    case "month": {
      const d = new Date(now);
      const y = d.getUTCFullYear();
      const m = d.getUTCMonth();
      return { id: y * 12 + m, endsAt: Date.UTC(y, m + 1, 1) };
    }
    case "fixed":
      return resetAt !== undefined && now < resetAt ? { id: 0, endsAt: resetAt } : { id: 1, endsAt: NEVER };
    case "none":
      return { id: 0, endsAt: NEVER };
  }
}

/** The id alone of the window `now` falls in (as {@link windowAt}'s), with nothing allocated: read several times a request. */
export function windowIdAt(kind: WindowKind, now: number, resetAt?: number): number {
  switch (kind) {
    case "minute":
      return Math.floor(now / MINUTE_MS);
    case "hour":
      return Math.floor(now / HOUR_MS);
    case "day":
      return Math.floor(now / DAY_MS);
    case "none":
      return 0;
    default:
      return windowAt(kind, now, resetAt).id;
  }
}

function fixedLength(now: number, ms: number): { id: number; endsAt: number } {
  const id = Math.floor(now / ms);
  return { id, endsAt: (id + 1) * ms };
}
