/**
 * Domain time for pins, circuits and isolate reports, in epoch ms. Production reads
 * Date.now(); tests running in the same isolate replace `now` to move state through
 * time without sleeping. When to sync (scheduling) uses real time, never this clock.
 */
export const clock = { now: (): number => Date.now() };
