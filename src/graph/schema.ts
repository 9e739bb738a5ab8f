import { z } from "zod";

/**
 * InferenceGraph specs, as KServe's CRD defines them (serving.kserve.io/v1alpha1), plus
 * Switchyard's extensions (marked). A KServe manifest is accepted as it is: Kubernetes
 * fields that mean nothing at the edge (resources, affinity, scaling) are kept but unused.
 */

export const KSERVE_API_VERSION = "serving.kserve.io/v1alpha1";
export const GRAPH_ROOT = "root"; // KServe's GraphRootNodeName: execution always starts here
export const MAX_GRAPH_DEPTH = 16; // longest nodeName chain; KServe has no bound (and no cycle check)
export const MAX_STEP_RETRIES = 5; // retries beyond this hide an outage rather than ride out a blip

export const RouterTypes = ["Sequence", "Splitter", "Ensemble", "Switch", "Router"] as const;

export const StepSchema = z
  .object({
    name: z.string().min(1).optional(),
    nodeName: z.string().min(1).optional(),
    serviceName: z.string().min(1).optional(),
    serviceUrl: z.string().min(1).optional(),
    /** Only "$response" has an effect (Sequence); anything else means the node input, as in KServe. */
    data: z.string().optional(),
    mapPredictionsToInstances: z.boolean().optional(),
    weight: z.number().int().min(0).optional(),
    condition: z.string().optional(),
    dependency: z.enum(["Soft", "Hard"]).optional(),
    /** Switchyard: per-step timeout for the upstream call, ms. */
    timeoutMs: z.number().int().positive().optional(),
    /** Switchyard: retries after a connect error or 5xx, with jittered backoff. */
    retries: z.number().int().min(0).max(MAX_STEP_RETRIES).optional(),
    /** Switchyard: a shadow step: this percentage of requests is copied to it, fire-and-forget; its answer is ignored. */
    mirror: z.number().min(0).max(100).optional(),
  })
  .strict();

/** Switchyard: how a `Router` node picks among its steps (Seldon's router contract and bandits). */
export const RouterSpecSchema = z.discriminatedUnion("type", [
  z
    .object({
      type: z.literal("external"),
      serviceUrl: z.string().min(1).optional(),
      serviceName: z.string().min(1).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal("epsilon_greedy"),
      n_branches: z.number().int().min(1),
      epsilon: z.number().min(0).max(1).default(0.1),
      best_branch: z.number().int().min(0).nullable().optional(),
      seed: z.number().int().nullable().optional(),
      branch_names: z.array(z.string()).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal("thompson_sampling"),
      n_branches: z.number().int().min(1),
      seed: z.number().int().nullable().optional(),
      branch_names: z.array(z.string()).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal("random_abtest"),
      ratioA: z.number().min(0).max(1).default(0.5),
    })
    .strict(),
]);

export const NodeSchema = z
  .object({
    routerType: z.enum(RouterTypes),
    steps: z.array(StepSchema).default([]),
    /** Switchyard: required for routerType Router. */
    router: RouterSpecSchema.optional(),
  })
  .strict();

export const GraphSpecSchema = z
  .object({
    nodes: z.record(z.string(), NodeSchema),
    routerTimeouts: z
      .object({
        serverRead: z.number().int().optional(),
        serverWrite: z.number().int().optional(),
        serverIdle: z.number().int().optional(),
        /** Seconds per upstream call; KServe's only timeout that applies per step here. */
        serviceClient: z.number().int().positive().optional(),
      })
      .optional(),
  })
  .passthrough();

/** A KServe InferenceGraph manifest. */
export const InferenceGraphDocumentSchema = z
  .object({
    apiVersion: z.literal(KSERVE_API_VERSION),
    kind: z.literal("InferenceGraph"),
    metadata: z.object({ name: z.string() }).passthrough(),
    spec: GraphSpecSchema,
  })
  .passthrough();

/** How a `serviceName` becomes a URL, as KServe's controller resolves it. */
export const ServiceSchema = z
  .object({
    url: z.string().min(1),
    protocol: z.enum(["v1", "v2"]).default("v1"),
    /** Model name in the predict path; defaults to the service's own name. */
    model: z.string().min(1).optional(),
  })
  .strict();

export const GraphSettingsSchema = z
  .object({
    /** Request header names to forward to steps: unanchored regexes on canonical names, like KServe's PROPAGATE_HEADERS. */
    propagate_headers: z.array(z.string()).default([]),
    /** Default per-step timeout, ms, when neither the step nor routerTimeouts.serviceClient sets one. */
    step_timeout_ms: z.number().int().positive().default(60_000),
  })
  .strict();

export type Step = z.output<typeof StepSchema>;
export type GraphNode = z.output<typeof NodeSchema>;
export type GraphSpec = z.output<typeof GraphSpecSchema>;
export type RouterSpec = z.output<typeof RouterSpecSchema>;
export type Service = z.output<typeof ServiceSchema>;
export type GraphSettings = z.output<typeof GraphSettingsSchema>;
