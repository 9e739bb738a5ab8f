import type { WindowKind } from "./wire";

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** The windows of one fixed length, counted from the epoch (so UTC-aligned). */
const FIXED_LENGTH_MS = { minute: MINUTE_MS, hour: HOUR_MS, day: DAY_MS } as const;
export const NEVER = Number.MAX_SAFE_INTEGER; // a window that does not end (concurrency; a fixed budget past its reset)

/**
 * The window `now` falls in: an id that changes when the window rolls over, and when the
 * window ends. Calendar windows are UTC. A fixed budget is one window until `resetAt`
 * and a second, never-ending one after it (the budget starts afresh once).
 */
export function windowAt(kind: WindowKind, now: number, resetAt?: number): { id: number; endsAt: number } {
  switch (kind) {
    case "minute":
    case "hour":
    case "day":
      return fixedLength(now, FIXED_LENGTH_MS[kind]);
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
    case "hour":
    case "day":
      return fixedId(now, FIXED_LENGTH_MS[kind]);
    case "none":
      return 0;
    default:
      return windowAt(kind, now, resetAt).id;
  }
}

const fixedId = (now: number, ms: number): number => Math.floor(now / ms);

function fixedLength(now: number, ms: number): { id: number; endsAt: number } {
  const id = fixedId(now, ms);
  return { id, endsAt: (id + 1) * ms };
}
