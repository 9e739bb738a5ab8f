import { DurableObject } from "cloudflare:workers";

/**
 * Per-pool shared state: replica leases, circuit breakers, health-check alarm.
 * The binding exists now so deployments keep a stable migration history; the state
 * machine itself is issue 3.
 *
 * Storage schema: none yet.
 */
export class PoolState extends DurableObject {}
