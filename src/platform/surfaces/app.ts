import { announceQuotas, announceSpecs } from "../../app/state/announce";
import type { Env } from "../env";
import type { ConfigSnapshot } from "../config-source";
import { internalError } from "./internal-error";
import { MALFORMED_PATH, openRoute, wellEncoded } from "./preamble";
import type { AppDeps, SurfaceRoute } from "./route";
import { RouteIndex } from "./route-index";
import { ROUTES, UNKNOWN_PATHS } from "./route-table";
import { SpanExporter } from "../../app/telemetry/exporter";
import type { Trace } from "../../app/telemetry/trace";
import { openTrace } from "./trace-open";

export type { AppDeps };

/** The path of an absolute URL without parsing it, or null if it has a query or fragment (then the URL is parsed). */
function plainPath(url: string): string | null {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0 || url.includes("?", start) || url.includes("#", start)) return null;
  return url.slice(start);
}

/** The Worker: every request found in the route table, opened by the one preamble, answered by its handler. */
export function createApp(given: AppDeps) {
  const index = new RouteIndex(ROUTES, UNKNOWN_PATHS);
  const exporter = given.exporter ?? new SpanExporter(); // one per isolate: its queue batches every request's spans
  const deps = { ...given, exporter };

  return {
    /** The cron (wrangler.toml [triggers]): pools learn the live spec, so health checks run without traffic. */
    async scheduled(env: Env): Promise<void> {
      const state = await deps.configSource.get(env);
      if (state.current?.config.routing.shared_state) await announceSpecs(env, state.current.poolSpecs);
      if (state.current) await announceQuotas(env, state.current.routewise);
    },
    async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
      const startedAt = Date.now();
      const path = plainPath(request.url) ?? new URL(request.url).pathname;
      const found = index.match(request.method, path);
      if (found.kind === "unknown") {
        // No route and no credential to check first: a malformed path is the client's error, not a path we lack.
        if (!wellEncoded(path)) return found.group.errors.reply(400, MALFORMED_PATH, "invalid_path");
        return found.group.errors.reply(404, found.message, "not_found");
      }
      if (found.kind === "wrong_method") {
        const allow = found.allow.join(", ");
        return found.group.errors.reply(405, `Method not allowed; this path accepts ${allow}`, "method_not_allowed", { allow });
      }
      return serve(found.route, found.params, path, request, env, ctx, deps, startedAt, exporter);
    },
  };
}

async function serve(route: SurfaceRoute, params: string[], path: string, request: Request, env: Env, ctx: ExecutionContext, deps: AppDeps, startedAt: number, exporter: SpanExporter): Promise<Response> {
  let snapshot: ConfigSnapshot | null = null;
  let trace: Trace | undefined;
  try {
    const opened = await openRoute(route, params, path, request, env, ctx, deps, startedAt);
    if (!opened.ok) return opened.response;
    snapshot = opened.call.snapshot;
    trace = route.traced ? openTrace(route, request, path, snapshot, ctx, exporter, startedAt) : undefined;
    if (!trace) return await route.handle(opened.call);
    const response = await route.handle({ ...opened.call, trace: trace.root });
    trace.root.set({ "http.response.status_code": response.status });
    if (response.status >= 500) trace.root.fail(String(response.status));
    trace.returned();
    return response;
  } catch (error) {
    trace?.abandon("router_error");
    return internalError(route, error, request, env, snapshot ?? lastSnapshot(deps, env), trace);
  }
}

/** The serving snapshot if the config source can still say (its redactions scrub the log line), else null. */
function lastSnapshot(deps: AppDeps, env: Env): ConfigSnapshot | null {
  try {
    return deps.configSource.fresh(env)?.current ?? null;
  } catch {
    return null;
  }
}
