import * as z from "zod/mini";
import { atMost, MAX_REQUEST_MS, MAX_SPLIT_PERCENT } from "./bounds";

/**
 * InferenceGraph specs, as KServe's CRD defines them (serving.kserve.io/v1alpha1), plus
 * Switchyard's extensions (marked). A KServe manifest is accepted as it is: Kubernetes
 * fields that mean nothing at the edge (resources, affinity, scaling) are kept but unused.
 */

export const KSERVE_API_VERSION = "serving.kserve.io/v1alpha1";
export const GRAPH_ROOT = "root"; // KServe's GraphRootNodeName: execution always starts here
export const MAX_GRAPH_DEPTH = 16; // longest nodeName chain; KServe has no bound (and no cycle check)
export const MAX_PRIOR = 1_000_000; // Beta prior pseudo-counts: a million already outweighs any feedback a node will see
export const MAX_STEP_RETRIES = 5; // retries beyond this hide an outage rather than ride out a blip

export const RouterTypes = ["Sequence", "Splitter", "Ensemble", "Switch", "Router"] as const;

export const StepSchema = z
  .strictObject({
    name: z.optional(z.string().check(z.minLength(1))),
    nodeName: z.optional(z.string().check(z.minLength(1))),
    serviceName: z.optional(z.string().check(z.minLength(1))),
    serviceUrl: z.optional(z.string().check(z.minLength(1))),
    /** Switchyard: send the step to a pool (replica picking, circuits, load) instead of one URL; needs `path`. */
    pool: z.optional(z.string().check(z.minLength(1))),
    /** Switchyard: with `pool`, the path each replica is called on, e.g. /v1/models/iris:predict. */
    path: z.optional(z.string().check(z.minLength(1))),
    /** Only "$response" has an effect (Sequence); anything else means the node input, as in KServe. */
    data: z.optional(z.string()),
    mapPredictionsToInstances: z.optional(z.boolean()),
    weight: z.optional(z.int().check(z.minimum(0), atMost(MAX_SPLIT_PERCENT, "percent of the node's traffic"))),
    condition: z.optional(z.string()),
    dependency: z.optional(z.enum(["Soft", "Hard"])),
    /** Switchyard: per-step timeout for the upstream call, ms. */
    timeoutMs: z.optional(z.int().check(z.positive(), atMost(MAX_REQUEST_MS, "ms: an hour"))),
    /** Switchyard: retries after a connect error or 5xx, with jittered backoff. */
    retries: z.optional(z.int().check(z.minimum(0), z.maximum(MAX_STEP_RETRIES))),
    /** Switchyard: a shadow step: this percentage of requests is copied to it, fire-and-forget; its answer is ignored. */
    mirror: z.optional(z.number().check(z.minimum(0), z.maximum(100))),
  });

/** Switchyard: how a `Router` node picks among its steps (Seldon's router contract and bandits). */
export const RouterSpecSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("external"),
    serviceUrl: z.optional(z.string().check(z.minLength(1))),
    serviceName: z.optional(z.string().check(z.minLength(1))),
  }),
  z.strictObject({
    type: z.literal("epsilon_greedy"),
    n_branches: z.int().check(z.minimum(1)),
    epsilon: z._default(z.number().check(z.minimum(0), z.maximum(1)), 0.1),
    best_branch: z.optional(z.nullable(z.int().check(z.minimum(0)))),
    seed: z.optional(z.nullable(z.int())),
    branch_names: z.optional(z.array(z.string())),
  }),
  z.strictObject({
    type: z.literal("thompson_sampling"),
    n_branches: z.int().check(z.minimum(1)),
    seed: z.optional(z.nullable(z.int())),
    branch_names: z.optional(z.array(z.string())),
    /** Switchyard: every arm's Beta prior (default Beta(1, 1), Seldon's uniform one). */
    prior: z.optional(z.strictObject({ alpha: z.number().check(z.gt(0), atMost(MAX_PRIOR, "pseudo-counts")), beta: z.number().check(z.gt(0), atMost(MAX_PRIOR, "pseudo-counts")) })),
  }),
  z.strictObject({
    type: z.literal("random_abtest"),
    ratioA: z._default(z.number().check(z.minimum(0), z.maximum(1)), 0.5),
  }),
]);

export const NodeSchema = z
  .strictObject({
    routerType: z.enum(RouterTypes),
    steps: z._default(z.array(StepSchema), []),
    /** Switchyard: required for routerType Router. */
    router: z.optional(RouterSpecSchema),
  });

export const GraphSpecSchema = z
  .looseObject({
    nodes: z.record(z.string(), NodeSchema),
    /** Switchyard: false records no spans for this graph's requests, on its own path or through a model (docs/telemetry.md). */
    telemetry: z.optional(z.boolean()),
    routerTimeouts: z.optional(
      z.object({
        serverRead: z.optional(z.int()),
        serverWrite: z.optional(z.int()),
        serverIdle: z.optional(z.int()),
        /** Seconds per upstream call; KServe's only timeout that applies per step here. */
        serviceClient: z.optional(z.int().check(z.positive(), atMost(MAX_REQUEST_MS / 1000, "s: an hour"))),
      }),
    ),
  });

/** A KServe InferenceGraph manifest. */
export const InferenceGraphDocumentSchema = z
  .looseObject({
    apiVersion: z.literal(KSERVE_API_VERSION),
    kind: z.literal("InferenceGraph"),
    metadata: z.looseObject({ name: z.string() }),
    spec: GraphSpecSchema,
  });

/** How a `serviceName` becomes a URL, as KServe's controller resolves it, or (Switchyard) a pool. */
export const ServiceSchema = z
  .strictObject({
    url: z.optional(z.string().check(z.minLength(1))),
    /** Switchyard: the service is a pool's replicas; exactly one of url and pool. */
    pool: z.optional(z.string().check(z.minLength(1))),
    protocol: z._default(z.enum(["v1", "v2"]), "v1"),
    /** Model name in the predict path; defaults to the service's own name. */
    model: z.optional(z.string().check(z.minLength(1))),
  });

export const GraphSettingsSchema = z
  .strictObject({
    /** Request header names to forward to steps: unanchored regexes on canonical names, like KServe's PROPAGATE_HEADERS. */
    propagate_headers: z._default(z.array(z.string()), []),
    /** Default per-step timeout, ms, when neither the step nor routerTimeouts.serviceClient sets one. */
    step_timeout_ms: z._default(z.int().check(z.positive(), atMost(MAX_REQUEST_MS, "ms: an hour")), 60_000),
  });

export type Step = z.output<typeof StepSchema>;
export type GraphNode = z.output<typeof NodeSchema>;
export type GraphSpec = z.output<typeof GraphSpecSchema>;
export type RouterSpec = z.output<typeof RouterSpecSchema>;
export type Service = z.output<typeof ServiceSchema>;
export type GraphSettings = z.output<typeof GraphSettingsSchema>;
