import { Router } from "itty-router";
import type { Env } from "../env";
import type { ConfigSource } from "../kv/config-source";
import type { RandomSource } from "../routing/random";
import { publishConfig } from "./admin";
import { handleInference } from "./inference";
import { health, listModels, routingView } from "./info";
import { metrics } from "./metrics";
import { methodNotAllowed, notFound, openAIError } from "./openai-error";

export interface AppDeps {
  configSource: ConfigSource;
  random: RandomSource;
}

/** OpenAI inference endpoints; the path is forwarded as is, so one handler serves all three. */
const INFERENCE_PATHS = ["/v1/chat/completions", "/v1/completions", "/v1/embeddings"] as const;

export function createApp(deps: AppDeps) {
  const router = Router<Request, [Env, ExecutionContext]>({
    catch: (error: unknown) => {
      console.error(JSON.stringify({ event: "unhandled_error", message: (error as Error)?.message ?? String(error) }));
      return openAIError(500, { message: "Internal router error", type: "server_error", code: "internal_error" });
    },
  });

  for (const path of INFERENCE_PATHS) {
    router.post(path, (request, env, ctx) => handleInference(request, env, ctx, path, deps));
    router.all(path, () => methodNotAllowed(["POST"]));
  }
  router.get("/v1/models", async (request, env) => listModels(request, await deps.configSource.get(env)));
  router.get("/health", async (_request, env) => health(await deps.configSource.get(env)));
  router.get("/routing", async (request, env) => routingView(request, env, await deps.configSource.get(env)));
  router.get("/metrics", async (request, env) => metrics(request, env, await deps.configSource.get(env)));
  router.put("/admin/config", (request, env) => publishConfig(request, env, deps.configSource));
  for (const [path, allow] of [["/v1/models", "GET"], ["/health", "GET"], ["/routing", "GET"], ["/metrics", "GET"], ["/admin/config", "PUT"]] as const) {
    router.all(path, () => methodNotAllowed([allow]));
  }
  router.all("*", (request) => notFound(`Unknown path ${new URL(request.url).pathname}`));

  return { fetch: (request: Request, env: Env, ctx: ExecutionContext) => router.fetch(request, env, ctx) as Promise<Response> };
}
