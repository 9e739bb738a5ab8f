import { calibrate } from "./calibrate";
import { dashboardIcon, dashboardPage, dashboardScript } from "./dashboard";
import { anthropicCountTokens, anthropicMessages, openAIResponses } from "./dialects";
import { handleFeedback } from "./feedback";
import { graphRequest } from "./graphs";
import { ANTHROPIC, KSERVE_GRAPH, KSERVE_PROTOCOL, OPENAI, SELDON } from "./groups";
import { health } from "./health";
import { openAIInference, protocolInference } from "./inference";
import { metrics } from "./metrics";
import { listModels } from "./models-list";
import { modelReady, retrieveModel, serverLive, serverMetadata, serverReady } from "./model-status";
import { MAX_CONFIG_BYTES, publishConfig } from "./publish-config";
import type { PathPattern, SurfaceRoute, UnknownPaths } from "./route";
import { route } from "./route";
import { routingView } from "./routing-view";
import { usageView } from "./usage-view";

/** OpenAI inference endpoints: nearly all the traffic. The path is forwarded as is, so one handler serves all three. */
const INFERENCE_PATHS = ["/v1/chat/completions", "/v1/completions", "/v1/embeddings"] as const;

const pattern = (shown: string, regex: RegExp, ...params: PathPattern["params"]): PathPattern => ({ shown, regex, params });
const MODEL = { name: "model", what: "the model name" };

/**
 * Every route the router answers, with what the preamble checks for it (preamble.ts, in
 * that order: admin token, config, client key, body, path parameters). A plain path is
 * found by one map lookup on the unparsed URL, so the inference POSTs never run a pattern;
 * a pattern's parameters reach the handler decoded, after the credential is checked.
 */
export const ROUTES: readonly SurfaceRoute[] = [
  ...INFERENCE_PATHS.map((path) =>
    route({ methods: ["POST"], path, group: OPENAI, config: "required", auth: "client", body: "max_body_bytes", traced: true, handle: (call) => openAIInference(call, path) }),
  ),
  // The dialects the router translates to chat completions (dialects.ts), routed by the body's model as above.
  route({ methods: ["POST"], path: "/v1/responses", group: OPENAI, config: "required", auth: "client", body: "max_body_bytes", traced: true, handle: openAIResponses }),
  route({ methods: ["POST"], path: "/v1/messages", group: ANTHROPIC, config: "required", auth: "client", body: "max_body_bytes", traced: true, handle: anthropicMessages }),
  route({ methods: ["POST"], path: "/v1/messages/count_tokens", group: ANTHROPIC, config: "required", auth: "client", body: "max_body_bytes", handle: anthropicCountTokens }),
  route({ methods: ["GET"], path: "/v1/models", group: OPENAI, config: "required", auth: "client", body: "none", handle: listModels }),
  // OpenAI's models.retrieve and KServe v1's model status share this path; `:predict` is the POST below.
  route({
    methods: ["GET"],
    path: pattern("/v1/models/<model>", /^\/v1\/models\/(?![^/]*:(?:predict|explain)$)([^/]+)$/, MODEL),
    group: OPENAI,
    config: "required",
    auth: "client",
    body: "none",
    handle: retrieveModel,
  }),
  route({
    methods: ["POST"],
    path: pattern("/v1/models/<model>:predict", /^\/v1\/models\/([^/]+):predict$/, MODEL),
    group: KSERVE_PROTOCOL,
    config: "required",
    auth: "client",
    body: "max_body_bytes",
    traced: true,
    handle: (call) => protocolInference(call, "v1"),
  }),
  route({
    methods: ["POST"],
    path: pattern("/v2/models/<model>/infer", /^\/v2\/models\/([^/]+)\/infer$/, MODEL),
    group: KSERVE_PROTOCOL,
    config: "required",
    auth: "client",
    body: "max_body_bytes",
    traced: true,
    handle: (call) => protocolInference(call, "v2"),
  }),
  // Triton's clients name a model version; the replica gets the same path for the model it serves.
  route({
    methods: ["POST"],
    path: pattern("/v2/models/<model>/versions/<version>/infer", /^\/v2\/models\/([^/]+)\/versions\/([^/]+)\/infer$/, MODEL, { name: "version", what: "the model version" }),
    group: KSERVE_PROTOCOL,
    config: "required",
    auth: "client",
    body: "max_body_bytes",
    traced: true,
    handle: (call) => protocolInference(call, "v2"),
  }),
  route({
    methods: ["GET"],
    path: pattern("/v2/models/<model>/ready", /^\/v2\/models\/([^/]+)\/ready$/, MODEL),
    group: KSERVE_PROTOCOL,
    config: "required",
    auth: "client",
    body: "none",
    handle: modelReady,
  }),
  // The Open Inference Protocol's server probes: open, as /health is, for orchestrators and load balancers.
  route({ methods: ["GET"], path: "/v2/health/live", group: KSERVE_PROTOCOL, config: "none", auth: "public", body: "none", handle: serverLive }),
  route({ methods: ["GET"], path: "/v2/health/ready", group: KSERVE_PROTOCOL, config: "optional", auth: "public", body: "none", handle: serverReady }),
  route({ methods: ["GET"], path: "/v2", group: KSERVE_PROTOCOL, config: "none", auth: "public", body: "none", handle: serverMetadata }),
  // A graph answers on its path and every subpath, as KServe's router does.
  route({
    methods: ["POST"],
    path: pattern("/graphs/<name>[/...]", /^\/graphs\/([^/]+)(?:\/.*)?$/, { name: "name", what: "the graph name" }),
    group: KSERVE_GRAPH,
    config: "required",
    auth: "client",
    body: "max_body_bytes",
    traced: true,
    handle: graphRequest,
  }),
  route({ methods: ["POST"], path: "/feedback", group: SELDON, config: "required", auth: "client", body: "max_body_bytes", handle: handleFeedback }),
  route({ methods: ["GET"], path: "/health", group: OPENAI, config: "optional", auth: "public", body: "none", handle: health }),
  route({ methods: ["GET"], path: "/routing", group: OPENAI, config: "optional", auth: "public_view", body: "none", handle: routingView }),
  route({ methods: ["GET"], path: "/metrics", group: OPENAI, config: "required", auth: "admin", body: "none", handle: metrics }),
  // The page and its script hold no data; what they show comes from /routing and /metrics with the token.
  route({ methods: ["GET"], path: "/dashboard", group: OPENAI, config: "none", auth: "admin_page", body: "none", handle: dashboardPage }),
  route({ methods: ["GET"], path: "/dashboard/app.js", group: OPENAI, config: "none", auth: "admin_page", body: "none", handle: dashboardScript }),
  route({ methods: ["GET"], path: "/favicon.ico", group: OPENAI, config: "none", auth: "admin_page", body: "none", handle: dashboardIcon }),
  route({ methods: ["GET"], path: "/admin/usage", group: OPENAI, config: "required", auth: "admin", body: "none", handle: usageView }),
  // Publishing needs no config (it may be the first); its limit is its own, never the config's.
  route({
    methods: ["PUT"],
    path: "/admin/config",
    group: OPENAI,
    config: "none",
    auth: "admin",
    body: { maxBytes: MAX_CONFIG_BYTES, tooLarge: `Config exceeds ${MAX_CONFIG_BYTES} bytes` },
    handle: publishConfig,
  }),
  // A model name may hold "/", so the model is everything between the prefix and /calibrate.
  route({
    methods: ["POST"],
    path: pattern("/admin/routewise/<model>/calibrate", /^\/admin\/routewise\/(.+)\/calibrate$/, MODEL),
    group: OPENAI,
    config: "required",
    auth: "admin",
    body: "max_body_bytes",
    handle: calibrate,
  }),
];

const KSERVE_HINT = (path: string) => `unknown path ${path}; expected /v1/models/<model>:predict, /v2/models/<model>/infer or /v2/models/<model>/ready`;

/** Who answers a path no route matches: the group owning its longest prefix, with a hint at what is there. */
export const UNKNOWN_PATHS: readonly UnknownPaths[] = [
  { prefix: "/", group: OPENAI, message: (path) => `Unknown path ${path}` },
  { prefix: "/v1/models", group: KSERVE_PROTOCOL, message: KSERVE_HINT },
  { prefix: "/v2/models", group: KSERVE_PROTOCOL, message: KSERVE_HINT },
  { prefix: "/v2/health", group: KSERVE_PROTOCOL, message: (path) => `unknown path ${path}; expected /v2/health/live or /v2/health/ready` },
  { prefix: "/graphs", group: KSERVE_GRAPH, message: (path) => `unknown path ${path}; a graph answers at /graphs/<name>` },
  { prefix: "/v1/messages", group: ANTHROPIC, message: (path) => `Unknown path ${path}; Anthropic's Messages API answers at /v1/messages and /v1/messages/count_tokens` },
  { prefix: "/feedback", group: SELDON, message: (path) => `unknown path ${path}; feedback is POST /feedback` },
  { prefix: "/admin/routewise", group: OPENAI, message: (path) => `Unknown path ${path}; calibrate at /admin/routewise/<model>/calibrate` },
];
