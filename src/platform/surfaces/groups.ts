import { KSERVE_GRAPH_ERRORS, KSERVE_PROTOCOL_ERRORS, OPENAI_ERRORS, SELDON_ERRORS } from "./error-style";
import { ANTHROPIC_ERRORS } from "./anthropic-error";
import { X_API_KEY_OR_BEARER } from "./client-auth";
import type { SurfaceGroup } from "./route";

/** OpenAI's endpoints, the router's own (health, routing view, metrics, admin) and unknown paths at the root. */
export const OPENAI: SurfaceGroup = { name: "openai", errors: OPENAI_ERRORS };

/** KServe's v1 and v2 inference protocols: `/v1/models/<m>:predict`, `/v2/models/<m>/infer`. */
export const KSERVE_PROTOCOL: SurfaceGroup = { name: "kserve_protocol", errors: KSERVE_PROTOCOL_ERRORS };

/** KServe's InferenceGraph router: `/graphs/<name>`. */
export const KSERVE_GRAPH: SurfaceGroup = { name: "kserve_graph", errors: KSERVE_GRAPH_ERRORS };

/** Seldon's feedback endpoint. */
export const SELDON: SurfaceGroup = { name: "seldon", errors: SELDON_ERRORS };

/** Anthropic's Messages API: `/v1/messages`, `/v1/messages/count_tokens`; its clients send their key as `x-api-key`. */
export const ANTHROPIC: SurfaceGroup = { name: "anthropic", errors: ANTHROPIC_ERRORS, credential: X_API_KEY_OR_BEARER };
