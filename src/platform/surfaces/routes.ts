import type { IRequest } from "itty-router";
import { Router } from "itty-router";
import type { Env } from "../env";
import type { ConfigSource } from "../config-source";
import type { RandomSource } from "../../lib/random";
import { announceQuotas, announceSpecs } from "../../app/state/announce";
import type { IsolateState } from "../../app/state/isolate-state";
import { publishConfig } from "./admin";
import { calibrate } from "./calibrate";
import { decodeSegment } from "./preamble";
import { handleInference, handleProtocolInference } from "./inference";
import { handleGraphRequest } from "./graphs";
import { handleFeedback } from "./feedback";
import { kserveError } from "./graph-response";
import { health, listModels, routingView } from "./info";
import { metrics } from "./metrics";
import { methodNotAllowed, notFound, openAIError } from "./openai-error";

const kserveProtocolNotFound = (path: string): Response =>
  new Response(JSON.stringify({ error: `unknown path ${path}; expected /v1/models/<model>:predict or /v2/models/<model>/infer` }), {
    status: 404,
    headers: { "content-type": "application/json" },
  });

export interface AppDeps {
  configSource: ConfigSource;
  random: RandomSource;
  /** This isolate's view of the shared state and its pending reports. */
  state: IsolateState;
}

/** OpenAI inference endpoints; the path is forwarded as is, so one handler serves all three. */
const INFERENCE_PATHS = ["/v1/chat/completions", "/v1/completions", "/v1/embeddings"] as const;
const INFERENCE_PATH_SET = new Set<string>(INFERENCE_PATHS);

/** The path of an absolute URL without parsing it, or null if it has a query (the route table decides then). */
function plainPath(url: string): string | null {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0 || url.includes("?", start) || url.includes("#", start)) return null;
  return url.slice(start);
}

function internalError(error: unknown): Response {
  console.error(JSON.stringify({ event: "unhandled_error", message: (error as Error)?.message ?? String(error) }));
  return openAIError(500, { message: "Internal router error", type: "server_error", code: "internal_error" });
}

export function createApp(deps: AppDeps) {
  const router = Router<IRequest, [Env, ExecutionContext]>({
    catch: internalError,
  });

  for (const path of INFERENCE_PATHS) {
    router.post(path, (request, env, ctx) => handleInference(request, env, ctx, path, deps));
    router.all(path, () => methodNotAllowed(["POST"]));
  }
  router.get("/v1/models", async (request, env) => listModels(request, await deps.configSource.get(env)));

  // Graphs answer on their path and every subpath, as KServe's router does. Path parts
  // are passed on still percent-encoded: handlers decode them after authentication.
  const graph = (request: IRequest, env: Env, ctx: ExecutionContext) => handleGraphRequest(request, env, ctx, request.params.name ?? "", deps);
  router.post("/graphs/:name", graph);
  router.post("/graphs/:name/*", graph);
  router.all("/graphs/*", () => kserveError(405, "graphs accept POST", { allow: "POST" }));

  // KServe inference protocols: v1 `/v1/models/<m>:predict`, v2 `/v2/models/<m>/infer`.
  // The exact /v1/models path is OpenAI's model list; the wildcard below would match it too.
  router.all("/v1/models", () => methodNotAllowed(["GET"]));
  router.post("/v1/models/*", (request, env, ctx) => {
    const path = new URL(request.url).pathname;
    const match = /^\/v1\/models\/([^/]+):predict$/.exec(path);
    if (!match) return kserveProtocolNotFound(path);
    return handleProtocolInference(request, env, ctx, "v1", match[1]!, deps);
  });
  router.post("/v2/models/:model/infer", (request, env, ctx) => handleProtocolInference(request, env, ctx, "v2", request.params.model ?? "", deps));
  router.get("/health", async (_request, env) => health(await deps.configSource.get(env)));
  router.get("/routing", async (request, env) => routingView(request, env, await deps.configSource.get(env), deps.state));
  router.get("/metrics", (request, env) => metrics(request, env, deps.configSource, deps.state));
  router.put("/admin/config", (request, env, ctx) => publishConfig(request, env, ctx, deps.configSource));
  // A model name may hold "/", so the model is everything between the prefix and /calibrate.
  router.post("/admin/routewise/*", (request, env) => {
    const rest = new URL(request.url).pathname.slice("/admin/routewise/".length);
    const model = rest.endsWith("/calibrate") ? decodeSegment(rest.slice(0, -"/calibrate".length)) : null;
    if (model === null || model === "") return notFound(`Unknown path ${new URL(request.url).pathname}; calibrate at /admin/routewise/<model>/calibrate`);
    return calibrate(request, env, model, deps.configSource, deps.state);
  });
  router.all("/admin/routewise/*", () => methodNotAllowed(["POST"]));
  router.post("/feedback", (request, env, ctx) => handleFeedback(request, env, ctx, deps.configSource, deps.state));
  for (const [path, allow] of [["/v1/models", "GET"], ["/health", "GET"], ["/routing", "GET"], ["/metrics", "GET"], ["/admin/config", "PUT"], ["/feedback", "POST"]] as const) {
    router.all(path, () => methodNotAllowed([allow]));
  }
  router.all("/v2/models/*", (request) => kserveProtocolNotFound(new URL(request.url).pathname));
  router.all("*", (request) => notFound(`Unknown path ${new URL(request.url).pathname}`));

  return {
    /** The cron (wrangler.toml [triggers]): pools learn the live spec, so health checks run without traffic. */
    async scheduled(env: Env): Promise<void> {
      const state = await deps.configSource.get(env);
      if (state.current?.config.routing.shared_state) await announceSpecs(env, state.current.poolSpecs);
      if (state.current) await announceQuotas(env, state.current.routewise);
    },
    fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
      // The inference endpoints skip the route table: they are nearly all the traffic,
      // and matching every route's pattern showed in profiles.
      const path = request.method === "POST" ? plainPath(request.url) : null;
      if (path !== null && INFERENCE_PATH_SET.has(path)) return handleInference(request, env, ctx, path, deps).catch(internalError);
      return router.fetch(request, env, ctx) as Promise<Response>;
    },
  };
}
