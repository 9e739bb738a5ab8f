/**
 * How long an object keeps calling out for a config no one names any more. The Worker's
 * cron tells every live pool's and quota's object its spec each minute, and isolates that
 * route to them sync with them; an object not told for this long belongs to no live
 * config (its pool or quota was dropped), so it stops its health checks, scrapes and
 * usage polls, which carry the config's credentials, instead of making them for good.
 */
export const SPEC_UNTOLD_MS = 300_000; // five cron periods: a late or missed run stops nothing live

/**
 * Whether an object's config is still named (by the cron, a publish or an isolate's
 * sync), and whether its calls out stopped for want of it: the one rule the pool's and
 * the quota's objects both keep.
 */
export class Naming {
  #toldAt = -Infinity;
  #stopped = false;

  /** Named at `now`; true when its calls out had stopped, so its alarm must be armed again. */
  told(now: number): boolean {
    this.#toldAt = Math.max(this.#toldAt, now);
    const stopped = this.#stopped;
    this.#stopped = false;
    return stopped;
  }

  /** Still named at `now` (told within SPEC_UNTOLD_MS); false stops its calls out until it is told again. */
  named(now: number): boolean {
    if (now - this.#toldAt <= SPEC_UNTOLD_MS) return true;
    this.#stopped = true;
    return false;
  }
}

