import { DurableObject } from "cloudflare:workers";

/**
 * One shard of session-affinity pins, (key, model) -> replica with a sliding TTL.
 * The binding exists now so deployments keep a stable migration history; pins are
 * issue 3.
 *
 * Storage schema: none yet.
 */
export class AffinityShard extends DurableObject {}
