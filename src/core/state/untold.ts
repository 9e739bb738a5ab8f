/**
 * How long an object keeps calling out for a config no one names any more. The Worker's
 * cron tells every live pool's and quota's object its spec each minute, and isolates that
 * route to them sync with them; an object not told for this long belongs to no live
 * config (its pool or quota was dropped), so it stops its health checks, scrapes and
 * usage polls, which carry the config's credentials, instead of making them for good.
 */
export const SPEC_UNTOLD_MS = 300_000; // five cron periods: a late or missed run stops nothing live
