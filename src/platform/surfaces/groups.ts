import { KSERVE_GRAPH_ERRORS, KSERVE_PROTOCOL_ERRORS, OPENAI_ERRORS, SELDON_ERRORS } from "./error-style";
import type { SurfaceGroup } from "./route";

/** OpenAI's endpoints, the router's own (health, routing view, metrics, admin) and unknown paths at the root. */
export const OPENAI: SurfaceGroup = { name: "openai", errors: OPENAI_ERRORS };

/** KServe's v1 and v2 inference protocols: `/v1/models/<m>:predict`, `/v2/models/<m>/infer`. */
export const KSERVE_PROTOCOL: SurfaceGroup = { name: "kserve_protocol", errors: KSERVE_PROTOCOL_ERRORS };

/** KServe's InferenceGraph router: `/graphs/<name>`. */
export const KSERVE_GRAPH: SurfaceGroup = { name: "kserve_graph", errors: KSERVE_GRAPH_ERRORS };

/** Seldon's feedback endpoint. */
export const SELDON: SurfaceGroup = { name: "seldon", errors: SELDON_ERRORS };
