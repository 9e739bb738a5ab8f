/**
 * The Durable Objects' clock. Production reads Date.now(); tests running in the same
 * isolate replace `now` to move pins, leases and circuits through time without sleeping.
 */
export const clock = { now: (): number => Date.now() };
