/**
 * The surfaces' conformance table: every route × every kind of bad input, each row with
 * the exact status, shape, code and message the router must answer. One table, run twice:
 *
 * - test/integration/conformance.test.ts runs every row that needs no real socket inside
 *   workerd (the Worker's own fetch, a fresh isolate for the env-changing rows);
 * - test/e2e/conformance.test.ts runs the rows marked `socket` (and `both`) against the
 *   router on workerd's own HTTP socket, as `switchyard serve` starts it: a body that
 *   breaks off only exists there (inside workerd an errored request stream reaches the
 *   Worker as a body that merely ends early).
 *
 * Plain data and vitest's `expect` only, so workerd and Node can both load it.
 */
import { expect } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/lib/json";

export const CLIENT_KEY = "sk-from-secret"; // TEST_CLIENT_KEY: vitest.config.ts, and the e2e router's vars
export const ADMIN_TOKEN = "test-admin-token"; // ADMIN_TOKEN: the same
export const MAX_BODY_BYTES = 16_384; // the table's routing.max_body_bytes: room for a JSON body nested past MAX_JSON_DEPTH
export const MAX_CONFIG_BYTES = 1024 * 1024; // PUT /admin/config's own limit (src/platform/surfaces/publish-config.ts)

const CLIENT = { authorization: `Bearer ${CLIENT_KEY}` };
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };
const JSON_TYPE = { "content-type": "application/json" };

/** The config the table runs against: client keys on, a small body limit, a pool per dialect, a RouteWise model, one graph. */
export function conformanceConfig(upstreamUrl: string): string {
  return `auth:
  client_keys: ["\${TEST_CLIENT_KEY}"]
models:
  chat: { pool: openai, upstream_model: served-chat }
  iris: { pool: kserve, upstream_model: sklearn-iris }
  priced:
    router: routewise
    router_params: { envelope_min_samples: 1 }
    routes:
      - { id: paid, url: "${upstreamUrl}", provider_type: on_demand, pricing: { input: 0.000001, output: 0.000002 } }
pools:
  openai:
    replicas: [{ id: up, url: "${upstreamUrl}" }]
  kserve:
    replicas: [{ id: up, url: "${upstreamUrl}" }]
routing: { shared_state: false, max_body_bytes: ${MAX_BODY_BYTES} }
---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: guarded
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
      - serviceUrl: ${upstreamUrl}
`;
}

/** The five error shapes (src/platform/surfaces/error-style.ts, anthropic-error.ts), and "json" for a route's own answer. */
export type Shape = "openai" | "kserve_protocol" | "kserve_graph" | "seldon" | "anthropic";

export type RowBody =
  | { kind: "text"; text: string }
  | { kind: "bytes"; bytes: number[] }
  /** The table's own config document (conformanceConfig), which only the runner can write. */
  | { kind: "table_config" }
  /**
   * Chunks without a Content-Length, `totalBytes` of them; then the body ends, or (`ends:
   * false`) neither ends nor goes on: only a router that counts as it reads can answer.
   */
  | { kind: "stream"; chunkBytes: number; totalBytes: number; ends: boolean }
  /** Socket only: a Content-Length and no body, the connection held open: the router must not wait for it. */
  | { kind: "length_only"; contentLength: number }
  /** Socket only: Content-Length 100, fewer bytes, then a half-close. */
  | { kind: "cut_short" }
  /** Socket only: chunked framing that breaks after the first chunk. */
  | { kind: "broken_chunks" };

export type Expected =
  | { status: number; shape: Shape; code: string; message: string | { contains: string }; allow?: string; challenge?: true; param?: string; besideError?: string[] }
  /** The route's own JSON answer (not an error shape), matched as a subset. */
  | { status: number; json: Record<string, unknown> };

export interface Row {
  /** The route, as route-table.ts writes it. */
  surface: string;
  /** The kind of bad input. */
  input: string;
  /** Whether a config is published when the row runs. */
  phase: "no_config" | "configured";
  /** How the router differs from the test Worker's: ADMIN_TOKEN unset; a config source that throws. */
  env?: "no_admin_token" | "config_source_throws";
  /** Where the row can run: inside workerd (default), over a real socket only, or both. */
  where?: "workerd" | "socket" | "both";
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: RowBody;
  expect: Expected;
}

interface Surface {
  surface: string;
  method: string;
  path: string;
  shape: Shape;
  /** The credential that opens it (null: public). */
  credential: Record<string, string> | null;
  credentialKind: "client" | "admin" | null;
  /** A body the route accepts (routes that read one). */
  body?: string;
  /** What a 401 without a key says, when not the OpenAI surfaces' words. */
  missing?: string;
}

const chatBody = JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] });
const S = {
  chat: { surface: "POST /v1/chat/completions", method: "POST", path: "/v1/chat/completions", shape: "openai", credential: CLIENT, credentialKind: "client", body: chatBody },
  completions: { surface: "POST /v1/completions", method: "POST", path: "/v1/completions", shape: "openai", credential: CLIENT, credentialKind: "client", body: JSON.stringify({ model: "chat", prompt: "hi" }) },
  embeddings: { surface: "POST /v1/embeddings", method: "POST", path: "/v1/embeddings", shape: "openai", credential: CLIENT, credentialKind: "client", body: JSON.stringify({ model: "chat", input: "hi" }) },
  models: { surface: "GET /v1/models", method: "GET", path: "/v1/models", shape: "openai", credential: CLIENT, credentialKind: "client" },
  predict: { surface: "POST /v1/models/<model>:predict", method: "POST", path: "/v1/models/iris:predict", shape: "kserve_protocol", credential: CLIENT, credentialKind: "client", body: '{"instances":[[1,2]]}' },
  infer: { surface: "POST /v2/models/<model>/infer", method: "POST", path: "/v2/models/iris/infer", shape: "kserve_protocol", credential: CLIENT, credentialKind: "client", body: '{"inputs":[]}' },
  graph: { surface: "POST /graphs/<name>[/...]", method: "POST", path: "/graphs/guarded", shape: "kserve_graph", credential: CLIENT, credentialKind: "client", body: '{"instances":[[1,2]]}' },
  feedback: { surface: "POST /feedback", method: "POST", path: "/feedback", shape: "seldon", credential: CLIENT, credentialKind: "client", body: '{"response":{"meta":{"routing":{}}},"reward":1}' },
  health: { surface: "GET /health", method: "GET", path: "/health", shape: "openai", credential: null, credentialKind: null },
  // routing.public_view defaults to false: /routing is admin-only.
  routing: { surface: "GET /routing", method: "GET", path: "/routing", shape: "openai", credential: ADMIN, credentialKind: "admin" },
  metrics: { surface: "GET /metrics", method: "GET", path: "/metrics", shape: "openai", credential: ADMIN, credentialKind: "admin" },
  config: { surface: "PUT /admin/config", method: "PUT", path: "/admin/config", shape: "openai", credential: ADMIN, credentialKind: "admin", body: "models: {}\n" },
  messages: { surface: "POST /v1/messages", method: "POST", path: "/v1/messages", shape: "anthropic", credential: CLIENT, credentialKind: "client", body: JSON.stringify({ model: "chat", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }), missing: "Missing API key: send `x-api-key: <key>` or `Authorization: Bearer <key>`" },
  countTokens: { surface: "POST /v1/messages/count_tokens", method: "POST", path: "/v1/messages/count_tokens", shape: "anthropic", credential: CLIENT, credentialKind: "client", body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }), missing: "Missing API key: send `x-api-key: <key>` or `Authorization: Bearer <key>`" },
  responses: { surface: "POST /v1/responses", method: "POST", path: "/v1/responses", shape: "openai", credential: CLIENT, credentialKind: "client", body: JSON.stringify({ model: "chat", input: "hi" }) },
  calibrate: { surface: "POST /admin/routewise/<model>/calibrate", method: "POST", path: "/admin/routewise/priced/calibrate", shape: "openai", credential: ADMIN, credentialKind: "admin", body: '{"probes":1}' },
  retrieve: { surface: "GET /v1/models/<model>", method: "GET", path: "/v1/models/chat", shape: "openai", credential: CLIENT, credentialKind: "client" },
  modelReady: { surface: "GET /v2/models/<model>/ready", method: "GET", path: "/v2/models/iris/ready", shape: "kserve_protocol", credential: CLIENT, credentialKind: "client" },
  inferVersion: { surface: "POST /v2/models/<model>/versions/<version>/infer", method: "POST", path: "/v2/models/iris/versions/1/infer", shape: "kserve_protocol", credential: CLIENT, credentialKind: "client", body: '{"inputs":[]}' },
  live: { surface: "GET /v2/health/live", method: "GET", path: "/v2/health/live", shape: "kserve_protocol", credential: null, credentialKind: null },
  ready: { surface: "GET /v2/health/ready", method: "GET", path: "/v2/health/ready", shape: "kserve_protocol", credential: null, credentialKind: null },
  server: { surface: "GET /v2", method: "GET", path: "/v2", shape: "kserve_protocol", credential: null, credentialKind: null },
} satisfies Record<string, Surface>;

const ALL: Surface[] = Object.values(S);
const WITH_BODY = ALL.filter((s) => s.body !== undefined);
const KEYED = ALL.filter((s) => s.credentialKind !== null);

const NO_CONFIG = "Router has no valid config: no config has been published (switchyard push FILE)";
const TOO_LARGE = `Request body exceeds the configured limit of ${MAX_BODY_BYTES} bytes`;
const CONFIG_TOO_LARGE = `Config exceeds ${MAX_CONFIG_BYTES} bytes`;
const UNREADABLE = { contains: "Request body could not be read" };
const MALFORMED_PATH = "the path is not valid percent-encoding";
const MISSING = { client: "Missing API key: send `Authorization: Bearer <key>`", admin: "Admin endpoints need `Authorization: Bearer <ADMIN_TOKEN>`" };
const WRONG = { client: "Invalid API key", admin: "Invalid admin token" };
const KSERVE_HINT = (path: string) => `unknown path ${path}; expected /v1/models/<model>:predict, /v2/models/<model>/infer or /v2/models/<model>/ready`;
const DEEP = `Request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`;
const FEEDBACK_NOT_OBJECT = "feedback must be a JSON object {request, response, reward, truth}: ";

/** A JSON object body whose array nests `levels` deep inside it (the object is one level more). */
export const nested = (levels: number) => `{"model":"chat","messages":[],"x":${"[".repeat(levels)}${"]".repeat(levels)}}`;

const text = (t: string): RowBody => ({ kind: "text", text: t });
const withBody = (s: Surface, headers: Record<string, string> = {}) => ({ ...(s.body !== undefined && s.method !== "GET" ? JSON_TYPE : {}), ...s.credential, ...headers });
const err = (s: Surface, status: number, code: string, message: string | { contains: string }, extra: { allow?: string; challenge?: true; param?: string; besideError?: string[] } = {}): Expected => ({
  status: s.shape === "anthropic" && status === 503 ? 529 : status, // Anthropic's overloaded_error
  
  shape: s.shape,
  code,
  message,
  ...extra,
});

function rows(): Row[] {
  const out: Row[] = [];
  const add = (s: Surface, input: string, row: Omit<Row, "surface" | "input" | "phase" | "method" | "path" | "headers"> & Partial<Pick<Row, "phase" | "method" | "path" | "headers">>) =>
    out.push({ surface: s.surface, input, phase: "configured", method: s.method, path: s.path, headers: withBody(s), ...row });

  // --- No config yet. Admin routes check the token before the config; the others the config before the client key.
  for (const s of ALL) {
    if (s === S.config) continue; // publishing needs no config: it makes one
    if (s === S.health) {
      add(s, "no config", { phase: "no_config", headers: {}, expect: { status: 503, json: { status: "no_config" } } });
      continue;
    }
    // The Open Inference Protocol's probes: the router lives without a config, and is not ready.
    if (s === S.live || s === S.server) {
      add(s, "no config", { phase: "no_config", headers: {}, expect: { status: 200, json: s === S.live ? { live: true } : { name: "switchyard", extensions: [] } } });
      continue;
    }
    if (s === S.ready) {
      add(s, "no config", { phase: "no_config", headers: {}, expect: { status: 503, json: { ready: false } } });
      continue;
    }
    if (s === S.routing) {
      // Open without a config, whatever its rule would be: it says why nothing serves.
      add(s, "no config (no credential needed)", { phase: "no_config", headers: {}, expect: { status: 503, json: { config: null, rejected: null, routing: null, models: {}, graphs: {} } } });
      continue;
    }
    const body = s.body !== undefined ? text(s.body) : undefined;
    if (s.credentialKind === "client") add(s, "no config, no credential: the config comes first", { phase: "no_config", headers: withBody({ ...s, credential: null }), body, expect: err(s, 503, "no_config", NO_CONFIG) });
    else {
      add(s, "no config, admin token", { phase: "no_config", body, expect: err(s, 503, "no_config", NO_CONFIG) });
      add(s, "no config, no credential: the admin token comes first", { phase: "no_config", headers: withBody({ ...s, credential: null }), body, expect: err(s, 401, "invalid_api_key", MISSING.admin, { challenge: true }) });
    }
  }
  for (const s of [S.metrics, S.config, S.calibrate] as Surface[]) {
    add(s, "ADMIN_TOKEN unset, no config: the route does not exist", { phase: "no_config", env: "no_admin_token", body: s.body !== undefined ? text(s.body) : undefined, expect: err(s, 404, "not_found", "Not found") });
  }

  // --- Wrong method: 405 naming the method the path takes, in the path's own shape.
  const wrongMethods: [Surface, string, string?][] = [
    [S.chat, "GET"],
    [S.messages, "GET"],
    [S.countTokens, "GET"],
    [S.responses, "DELETE"],
    [S.completions, "GET"],
    [S.embeddings, "DELETE"],
    [S.models, "POST"],
    [S.predict, "GET"],
    [S.infer, "GET"],
    [S.graph, "GET"],
    [S.graph, "PUT", "/graphs/guarded/any/subpath"],
    [S.feedback, "GET"],
    [S.health, "POST"],
    [S.routing, "DELETE"],
    [S.metrics, "POST"],
    [S.config, "GET"],
    [S.calibrate, "GET"],
    [S.retrieve, "POST"],
    [S.modelReady, "POST"],
    [S.inferVersion, "GET"],
    [S.live, "POST"],
    [S.ready, "DELETE"],
  ];
  for (const [s, method, path] of wrongMethods) {
    add(s, `wrong method ${method}`, { method, path: path ?? s.path, headers: { ...s.credential }, expect: err(s, 405, "method_not_allowed", `Method not allowed; this path accepts ${s.method}`, { allow: s.method }) });
  }

  // --- Unknown subpaths: a 404 from the group that owns the path.
  const unknown: [Surface, string, string, Shape, string][] = [
    [S.chat, "POST", "/v1/chat/completions/extra", "openai", "Unknown path /v1/chat/completions/extra"],
    [S.messages, "POST", "/v1/messages/batches", "anthropic", "Unknown path /v1/messages/batches; Anthropic's Messages API answers at /v1/messages and /v1/messages/count_tokens"],
    [S.responses, "GET", "/v1/responses/resp_123", "openai", "Unknown path /v1/responses/resp_123"],
    [S.models, "GET", "/v1/models/chat/extra", "kserve_protocol", KSERVE_HINT("/v1/models/chat/extra")],
    [S.predict, "POST", "/v1/models/iris:explain", "kserve_protocol", KSERVE_HINT("/v1/models/iris:explain")],
    [S.predict, "POST", "/v1/models/iris:predict/extra", "kserve_protocol", KSERVE_HINT("/v1/models/iris:predict/extra")],
    [S.infer, "GET", "/v2/models/iris/ready/extra", "kserve_protocol", KSERVE_HINT("/v2/models/iris/ready/extra")],
    [S.infer, "GET", "/v2/health/startup", "kserve_protocol", "unknown path /v2/health/startup; expected /v2/health/live or /v2/health/ready"],
    [S.infer, "GET", "/v2/anything", "openai", "Unknown path /v2/anything"],
    [S.graph, "POST", "/graphs", "kserve_graph", "unknown path /graphs; a graph answers at /graphs/<name>"],
    [S.graph, "POST", "/graphs/", "kserve_graph", "unknown path /graphs/; a graph answers at /graphs/<name>"],
    [S.feedback, "POST", "/feedback/extra", "seldon", "unknown path /feedback/extra; feedback is POST /feedback"],
    [S.health, "GET", "/health/extra", "openai", "Unknown path /health/extra"],
    [S.metrics, "GET", "/metrics/extra", "openai", "Unknown path /metrics/extra"],
    [S.config, "PUT", "/admin/config/extra", "openai", "Unknown path /admin/config/extra"],
    [S.calibrate, "POST", "/admin/routewise/priced", "openai", "Unknown path /admin/routewise/priced; calibrate at /admin/routewise/<model>/calibrate"],
    [S.calibrate, "POST", "/admin/routewise//calibrate", "openai", "Unknown path /admin/routewise//calibrate; calibrate at /admin/routewise/<model>/calibrate"],
  ];
  for (const [s, method, path, shape, message] of unknown) {
    add(s, `unknown path ${path}`, { method, path, headers: { ...s.credential }, expect: { status: 404, shape, code: "not_found", message } });
  }

  // --- Credentials.
  for (const s of KEYED) {
    const kind = s.credentialKind!;
    const body = s.body !== undefined ? text(s.body) : undefined;
    const missing = s.missing ?? MISSING[kind];
    add(s, "missing credential", { headers: withBody({ ...s, credential: null }), body, expect: err(s, 401, "invalid_api_key", missing, { challenge: true }) });
    add(s, "invalid credential", { headers: withBody(s, { authorization: "Bearer sk-wrong" }), body, expect: err(s, 401, "invalid_api_key", WRONG[kind], { challenge: true }) });
    add(s, "empty bearer", { headers: withBody(s, { authorization: "Bearer " }), body, expect: err(s, 401, "invalid_api_key", missing, { challenge: true }) });
    if (s.shape === "anthropic") {
      add(s, "invalid x-api-key", { headers: withBody({ ...s, credential: null }, { "x-api-key": "sk-wrong" }), body, expect: err(s, 401, "invalid_api_key", WRONG.client, { challenge: true }) });
      add(s, "empty x-api-key", { headers: withBody({ ...s, credential: null }, { "x-api-key": " " }), body, expect: err(s, 401, "invalid_api_key", missing, { challenge: true }) });
    }
    if (kind === "admin") {
      add(s, "a client key is not the admin token", { headers: withBody(s, CLIENT), body, expect: err(s, 401, "invalid_api_key", WRONG.admin, { challenge: true }) });
      add(s, "ADMIN_TOKEN unset: the route does not exist", { env: "no_admin_token", body, expect: err(s, 404, "not_found", "Not found") });
    }
  }
  add(S.health, "no credential: public", { headers: {}, expect: { status: 200, json: { status: "ok" } } });
  add(S.ready, "no credential: public", { headers: {}, expect: { status: 200, json: { ready: true } } });
  add(S.retrieve, "unknown model", { expect: err(S.retrieve, 404, "model_not_found", "The model 'gpt-nowhere' does not exist or you do not have access to it", { param: "model" }), path: "/v1/models/gpt-nowhere" });
  add(S.modelReady, "unknown model", { expect: err(S.modelReady, 404, "model_not_found", "The model 'gpt-nowhere' does not exist or you do not have access to it"), path: "/v2/models/gpt-nowhere/ready" });
  add(S.inferVersion, "a version that is no name", { path: "/v2/models/iris/versions/.x/infer", body: text('{"inputs":[]}'), expect: err(S.inferVersion, 400, "invalid_path", "the model version in the path must be 1-64 letters, digits and . _ -, starting with a letter or digit") });

  // --- Bodies over the limit: by Content-Length, and counted when no length is declared.
  for (const s of WITH_BODY) {
    const [limit, message] = s === S.config ? [MAX_CONFIG_BYTES, CONFIG_TOO_LARGE] : [MAX_BODY_BYTES, TOO_LARGE];
    add(s, "body over the limit by Content-Length", { body: text(" ".repeat(limit + 1)), expect: err(s, 413, "request_too_large", message) });
    add(s, "Content-Length over the limit, the body never sent", { where: "socket", body: { kind: "length_only", contentLength: limit + 1 }, expect: err(s, 413, "request_too_large", message) });
    // The body stops a little past the limit without ending: a router that waited for its end to measure it would never answer.
    const chunkBytes = s === S.config ? 64 * 1024 : 1024;
    const stream: RowBody = { kind: "stream", chunkBytes, totalBytes: limit + 2 * chunkBytes, ends: false };
    add(s, "body over the limit, counted (no Content-Length)", { where: "both", body: stream, expect: err(s, 413, "request_too_large", message) });
    add(s, "body shorter than its Content-Length, then a half-close", { where: "socket", body: { kind: "cut_short" }, expect: err(s, 400, "unreadable_body", UNREADABLE) });
    add(s, "broken chunked framing", { where: "socket", body: { kind: "broken_chunks" }, expect: err(s, 400, "unreadable_body", UNREADABLE) });
  }
  add(S.config, "body within the limit, counted (no Content-Length), not a config", { where: "both", body: { kind: "stream", chunkBytes: 1024, totalBytes: 4096, ends: true }, expect: err(S.config, 400, "invalid_config", "Config rejected: (document): is empty", { besideError: ["issues"] }) });

  // --- Bodies the router reads as JSON.
  const notJson: [Surface, string, string][] = [
    [S.chat, "invalid_json", "Request body is not valid JSON"],
    [S.messages, "invalid_json", "Request body is not valid JSON"],
    [S.countTokens, "invalid_json", "Request body is not valid JSON"],
    [S.responses, "invalid_json", "Request body is not valid JSON"],
    [S.feedback, "invalid_json", `${FEEDBACK_NOT_OBJECT}Request body is not valid JSON`],
    [S.calibrate, "invalid_json", "Request body is not valid JSON"],
  ];
  for (const [s, code, message] of notJson) {
    add(s, "not JSON", { body: text('{"model": "chat", '), expect: err(s, 400, code, { contains: message }) });
    add(s, "JSON, not an object", { body: text("[1,2]"), expect: err(s, 400, code, s === S.feedback ? `${FEEDBACK_NOT_OBJECT}Request body must be a JSON object` : "Request body must be a JSON object") });
    add(s, "empty body", { body: text(""), expect: err(s, 400, code, s === S.feedback ? `${FEEDBACK_NOT_OBJECT}Request body is required and must be a JSON object` : "Request body is required and must be a JSON object") });
    add(s, "not UTF-8", { body: { kind: "bytes", bytes: [0x7b, 0x22, 0x6d, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d] }, expect: err(s, 400, code, s === S.feedback ? `${FEEDBACK_NOT_OBJECT}Request body is not valid UTF-8` : "Request body is not valid UTF-8") });
    // 6,000 levels once overflowed the stack: refused before anything re-encodes it.
    add(s, `nested past ${MAX_JSON_DEPTH} levels`, { body: text(nested(6_000)), expect: err(s, 400, code, s === S.feedback ? `${FEEDBACK_NOT_OBJECT}${DEEP}` : DEEP) });
    add(s, `nested one level past ${MAX_JSON_DEPTH}`, { body: text(nested(MAX_JSON_DEPTH)), expect: err(s, 400, code, s === S.feedback ? `${FEEDBACK_NOT_OBJECT}${DEEP}` : DEEP) });
  }
  add(S.chat, "no model", { body: text('{"messages":[]}'), expect: err(S.chat, 400, "missing_model", "Missing required parameter: 'model'", { param: "model" }) });
  add(S.chat, "model not a string", { body: text('{"model":42}'), expect: err(S.chat, 400, "invalid_model", "'model' must be a non-empty string", { param: "model" }) });
  for (const [field, value] of [["max_tokens", "1e308"], ["max_tokens", "-1"], ["max_tokens", '"lots"'], ["max_completion_tokens", "0"]] as const) {
    add(S.chat, `${field}: ${value}`, { body: text(`{"model":"chat","messages":[],"${field}":${value}}`), expect: err(S.chat, 400, "invalid_max_tokens", `'${field}' must be a whole number from 1 to 1000000`, { param: field }) });
  }
  add(S.chat, "unknown model", { body: text('{"model":"gpt-nowhere","messages":[]}'), expect: err(S.chat, 404, "model_not_found", "The model 'gpt-nowhere' does not exist or you do not have access to it", { param: "model" }) });
  // --- The translated dialects: what the translation cannot take is the client's 400, in the surface's shape, naming the field.
  const turn = (content: unknown) => ({ model: "chat", max_tokens: 8, messages: [{ role: "user", content }] });
  const messagesRows: [string, unknown, string][] = [
    ["no max_tokens", { model: "chat", messages: [{ role: "user", content: "hi" }] }, "max_tokens: is required"],
    ["max_tokens not a number", { ...turn("hi"), max_tokens: "lots" }, "max_tokens: must be a whole number from 1 to 1000000"],
    ["max_tokens past its bound", { ...turn("hi"), max_tokens: 1e308 }, "max_tokens: must be a whole number from 1 to 1000000"],
    ["no model", { max_tokens: 8, messages: [] }, "model: is required and must be a non-empty string"],
    ["messages not an array", { model: "chat", max_tokens: 8, messages: "hi" }, "messages: must be an array"],
    ["no messages", { model: "chat", max_tokens: 8, messages: [] }, "messages: must hold at least one message"],
    ["a role that is not user, assistant or system", { model: "chat", max_tokens: 8, messages: [{ role: "tool", content: "hi" }] }, "messages.0.role: must be 'user', 'assistant' or 'system'"],
    ["system messages only", { model: "chat", max_tokens: 8, messages: [{ role: "system", content: "hi" }] }, "messages: must hold at least one user or assistant message"],
    ["an unknown block type", turn([{ type: "video", url: "x" }]), 'messages.0.content.0.type: unknown or unsupported content block type "video" in a user turn (expected text, image or tool_result)'],
    ["a text block without text", turn([{ type: "text" }]), "messages.0.content.0.text: must be a string"],
    ["content neither text nor blocks", turn(5), "messages.0.content: must be a string or an array of content blocks"],
    ["system neither text nor blocks", { ...turn("hi"), system: 5 }, "system: must be a string or an array of content blocks"],
    ["an image that is not an image", turn([{ type: "image", source: { type: "base64", media_type: "text/html", data: "x" } }]), "messages.0.content.0.source.media_type: must be an image media type such as image/png"],
    ["tool_result without a matching tool_use", turn([{ type: "tool_result", tool_use_id: "toolu_nowhere", content: "42" }]), "messages.0.content.0.tool_use_id: no tool_use block with id 'toolu_nowhere' in the assistant turn just before"],
    ["temperature out of range", { ...turn("hi"), temperature: 5 }, "temperature: must be a number from 0 to 1"],
    ["stream not a boolean", { ...turn("hi"), stream: "yes" }, "stream: must be a boolean"],
    ["a server tool", { ...turn("hi"), tools: [{ type: "web_search_20250305", name: "web_search" }] }, 'tools.0.type: server tool "web_search_20250305" is not available through this router: only client tools (name, description, input_schema) are'],
    ["an unknown tool_choice", { ...turn("hi"), tool_choice: { type: "sometimes" } }, "tool_choice.type: must be 'auto', 'any', 'tool' or 'none'"],
  ];
  for (const [input, body, message] of messagesRows) add(S.messages, input, { body: text(JSON.stringify(body)), expect: err(S.messages, 400, "invalid_request", message) });
  add(S.messages, "unknown model", { body: text(JSON.stringify({ ...turn("hi"), model: "gpt-nowhere" })), expect: err(S.messages, 404, "model_not_found", "The model 'gpt-nowhere' does not exist or you do not have access to it") });
  add(S.countTokens, "an unknown block type", { body: text(JSON.stringify(turn([{ type: "video" }]))), expect: err(S.countTokens, 400, "invalid_request", 'messages.0.content.0.type: unknown or unsupported content block type "video" in a user turn (expected text, image or tool_result)') });
  add(S.countTokens, "unknown model", { body: text(JSON.stringify({ ...turn("hi"), model: "gpt-nowhere" })), expect: err(S.countTokens, 404, "model_not_found", "The model 'gpt-nowhere' does not exist or you do not have access to it") });
  add(S.countTokens, "a prompt, estimated", { body: text(S.countTokens.body), expect: { status: 200, json: { input_tokens: 2 } } }); // "user" and "hi": 6 characters, 4 a token
  const STATELESS = "this router keeps no responses (it is stateless): send the whole conversation in `input`";
  const responsesRows: [string, Record<string, unknown>, string, string][] = [
    ["store: true", { store: true }, "store", `store: must be false or absent: ${STATELESS}`],
    ["previous_response_id", { previous_response_id: "resp_1" }, "previous_response_id", `previous_response_id: is not supported: ${STATELESS}`],
    ["background: true", { background: true }, "background", `background: is not supported: ${STATELESS}`],
    ["input of the wrong type", { input: 42 }, "input", "input: must be an array"],
    ["an unknown item type", { input: [{ type: "computer_call" }] }, "input.0.type", 'input.0.type: unknown or unsupported input item type "computer_call" (expected message, function_call, function_call_output or reasoning)'],
    ["an unknown content part", { input: [{ role: "user", content: [{ type: "input_audio" }] }] }, "input.0.content.0.type", 'input.0.content.0.type: unknown or unsupported content part type "input_audio" (expected input_text or input_image)'],
    ["function_call_output without its function_call", { input: [{ type: "function_call_output", call_id: "call_nowhere", output: "42" }] }, "input.0.call_id", "input.0.call_id: no function_call with call_id 'call_nowhere' before it in input"],
    ["max_output_tokens of the wrong type", { max_output_tokens: "lots" }, "max_output_tokens", "max_output_tokens: must be a whole number from 1 to 1000000"],
    ["a tool without a type", { tools: [{ name: "f" }] }, "tools.0.type", "tools.0.type: must be a string"],
    ["a namespace without a name", { tools: [{ type: "namespace", tools: [] }] }, "tools.0.name", "tools.0.name: must be a string"],
  ];
  for (const [input, extra, param, message] of responsesRows) {
    add(S.responses, input, { body: text(JSON.stringify({ model: "chat", input: "hi", ...extra })), expect: err(S.responses, 400, "invalid_request", message, { param }) });
  }
  add(S.responses, "no model", { body: text('{"input":"hi"}'), expect: err(S.responses, 400, "invalid_request", "model: is required and must be a non-empty string", { param: "model" }) });
  add(S.responses, "unknown model", { body: text('{"model":"gpt-nowhere","input":"hi"}'), expect: err(S.responses, 404, "model_not_found", "The model 'gpt-nowhere' does not exist or you do not have access to it", { param: "model" }) });
  add(S.infer, "unknown model", { path: "/v2/models/nope/infer", body: text("{}"), expect: err(S.infer, 404, "model_not_found", "The model 'nope' does not exist or you do not have access to it") });
  add(S.graph, "unknown graph", { path: "/graphs/nope", body: text("{}"), expect: err(S.graph, 404, "graph_not_found", 'no InferenceGraph named "nope"') });

  // --- Malformed percent-encoding in a path parameter: 400 after the credential (no key, no hint about the path).
  const encodings: [Surface, string, string][] = [
    [S.predict, "/v1/models/%E0%A4%A:predict", "the model name in the path is not valid percent-encoding"],
    [S.infer, "/v2/models/%zz/infer", "the model name in the path is not valid percent-encoding"],
    [S.graph, "/graphs/%zz", "the graph name in the path is not valid percent-encoding"],
    [S.graph, "/graphs/%zz/sub", "the graph name in the path is not valid percent-encoding"],
    [S.calibrate, "/admin/routewise/%zz/calibrate", "the model name in the path is not valid percent-encoding"],
  ];
  for (const [s, path, message] of encodings) {
    add(s, `invalid percent-encoding, no credential`, { path, headers: withBody({ ...s, credential: null }), body: text(s.body!), expect: err(s, 401, "invalid_api_key", MISSING[s.credentialKind!], { challenge: true }) });
    add(s, `invalid percent-encoding`, { path, body: text(s.body!), expect: err(s, 400, "invalid_path", message) });
  }
  // Anywhere else in a path: a graph's subpath (after the credential, as above), and a path no route serves (a 400, not a 404, from the group that owns it).
  add(S.graph, "invalid percent-encoding in the subpath, no credential", { path: "/graphs/guarded/%zz", headers: withBody({ ...S.graph, credential: null }), body: text(S.graph.body), expect: err(S.graph, 401, "invalid_api_key", MISSING.client, { challenge: true }) });
  add(S.graph, "invalid percent-encoding in the subpath", { path: "/graphs/guarded/%zz", body: text(S.graph.body), expect: err(S.graph, 400, "invalid_path", MALFORMED_PATH) });
  const malformedUnknown: [Surface, string][] = [
    [S.chat, "/v1/chat/%ZZ"],
    [S.chat, "/v1/chat/completions%ZZ"],
    [S.infer, "/v2/models/iris/%E0%A4%A"],
    [S.feedback, "/feedback/%zz"],
    [S.config, "/admin/config%ZZ"],
    [S.calibrate, "/admin/routewise/priced/calibrate%ZZ"],
  ];
  for (const [s, path] of malformedUnknown) {
    add(s, `unknown path with invalid percent-encoding ${path}`, { method: s.method, path, headers: {}, expect: err(s, 400, "invalid_path", MALFORMED_PATH) });
  }

  // --- Router headers a client may send, malformed: refused before any replica, in the surface's shape.
  const headerRows: [string, string, string, string][] = [
    ["x-switchyard-priority", "urgent", "invalid_priority", "X-Switchyard-Priority must be one of sheddable, standard, critical"],
    ["x-slo-ttft-ms", "fast", "invalid_slo", "X-SLO-TTFT-Ms must be a whole number of milliseconds from 1 to 600000"],
    ["x-slo-tpot-ms", "0", "invalid_slo", "X-SLO-TPOT-Ms must be a whole number of milliseconds from 1 to 600000"],
    ["x-slo-ttft-ms", "999999999", "invalid_slo", "X-SLO-TTFT-Ms must be a whole number of milliseconds from 1 to 600000"],
  ];
  for (const s of [S.chat, S.predict, S.infer]) {
    for (const [header, value, code, message] of headerRows) {
      add(s, `${header}: ${value}`, { headers: withBody(s, { [header]: value }), body: text(s.body!), expect: err(s, 400, code, message, s.shape === "openai" ? { param: header } : {}) });
    }
  }

  // --- A handler that throws: 500 in the route's own shape, never a stack or a secret.
  for (const s of ALL) {
    if (s === S.live || s === S.server) continue; // they read no config, so nothing of it can throw there
    // PUT /admin/config reads no config: it throws where it tells the config source a new version is out.
    add(s, "the config source throws", { env: "config_source_throws", body: s === S.config ? { kind: "table_config" } : s.body !== undefined ? text(s.body) : undefined, expect: err(s, 500, "internal_error", "Internal router error") });
  }

  return out;
}

export const CONFORMANCE: readonly Row[] = rows();

/** What came back, however it was fetched. */
export interface Answer {
  status: number;
  header(name: string): string | null;
  text: string;
}

// OpenAI's `type` for each status the router answers with (src/platform/surfaces/error-style.ts).
const OPENAI_TYPE: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  405: "invalid_request_error",
  413: "invalid_request_error",
  500: "server_error",
  503: "service_unavailable",
};

// Anthropic's `type` for each status (src/platform/surfaces/anthropic-error.ts): the router's 503 is its 529.
const ANTHROPIC_TYPE: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  404: "not_found_error",
  405: "invalid_request_error",
  413: "request_too_large",
  500: "api_error",
  529: "overloaded_error",
};

/** Asserts a row's answer: status, shape, code, message and the headers it promises. */
export function expectConformant(row: Row, answer: Answer): void {
  const where = `${row.surface} — ${row.input}: ${answer.status} ${answer.text.slice(0, 300)}`;
  const want = row.expect;
  expect(answer.status, where).toBe(want.status);
  expect(answer.header("content-type"), where).toMatch(/^application\/json/);
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  if ("json" in want) {
    expect(body, where).toMatchObject(want.json);
    return;
  }
  const message = (got: unknown) => (typeof want.message === "string" ? expect(got, where).toBe(want.message) : expect(got, where).toContain(want.message.contains));
  switch (want.shape) {
    case "openai": {
      expect(Object.keys(body), where).toEqual(["error", ...(want.besideError ?? [])]);
      const error = body.error as Record<string, unknown>;
      expect(Object.keys(error).sort(), where).toEqual(["code", "message", "param", "type"]);
      expect(error.code, where).toBe(want.code);
      expect(error.type, where).toBe(want.status === 404 ? (want.code === "model_not_found" ? "invalid_request_error" : "not_found_error") : OPENAI_TYPE[want.status]);
      expect(error.param, where).toBe(want.param ?? null);
      message(error.message);
      break;
    }
    case "anthropic": {
      expect(Object.keys(body), where).toEqual(["type", "error"]);
      expect(body.type, where).toBe("error");
      const error = body.error as Record<string, unknown>;
      expect(Object.keys(error).sort(), where).toEqual(["message", "type"]);
      expect(error.type, where).toBe(ANTHROPIC_TYPE[want.status]);
      message(error.message);
      break;
    }
    case "kserve_protocol":
      expect(Object.keys(body), where).toEqual(["error"]);
      message(body.error);
      break;
    case "kserve_graph":
      expect(Object.keys(body).sort(), where).toEqual(["cause", "error"]);
      expect(body.error, where).toBe("Failed to process request");
      message(body.cause);
      break;
    case "seldon":
      expect(Object.keys(body), where).toEqual(["status"]);
      expect(body.status, where).toMatchObject({ code: want.status, reason: "BAD_DATA", status: "FAILURE" });
      message((body.status as { info: unknown }).info);
      break;
  }
  expect(answer.header("allow"), where).toBe(want.allow ?? null);
  expect(answer.header("www-authenticate"), where).toBe(want.challenge ? 'Bearer realm="switchyard"' : null);
}

/** A row's name in the test report. */
export const rowName = (row: Row) => `${row.surface} — ${row.input}${row.env ? ` (${row.env})` : ""}`;
