import type { Principal } from "../../core/limits/principal";
/**
 * What a route declares: everything the one preamble (preamble.ts) needs to open a request
 * for it, in the route's own error style, before its handler runs.
 */
import type { IsolateState } from "../../app/state/isolate-state";
import type { Span } from "../../app/telemetry/trace";
import type { SpanExporter } from "../../app/telemetry/exporter";
import type { RandomSource } from "../../lib/random";
import type { ConfigSnapshot, ConfigSource, ConfigState } from "../config-source";
import type { Env } from "../env";
import type { ErrorStyle } from "./error-style";

/** A family of paths that speak one dialect and answer every error in one shape. */
export interface SurfaceGroup {
  name: "openai" | "kserve_protocol" | "kserve_graph" | "seldon" | "anthropic";
  errors: ErrorStyle;
  /** Where the group's clients put their key, when not only in `Authorization: Bearer` (Anthropic's `x-api-key`). */
  credential?: ClientCredential;
}

/** The client's key as a group reads it, and how a 401 tells a client without one where to put it. */
export interface ClientCredential {
  read(request: Request): string | undefined;
  hint: string;
}

/**
 * Who may call: anyone; a client key of the config (open while the config has none);
 * the ADMIN_TOKEN secret (the route does not exist while it is unset); or, for
 * `/routing`, chosen by the config: the admin token, or with `routing.public_view` also a
 * client key (the handler then shows the public view unless the admin token came).
 * `admin_page`: the dashboard's page and script, which a browser loads without a header
 * and which hold no data (the data needs the token): anyone, while ADMIN_TOKEN is set.
 */
export type AuthRule = "public" | "client" | "admin" | "public_view" | "admin_page";

/**
 * The config a route needs: one that is serving (503 without); whatever there is (the
 * handler words the absence itself); none at all (publishing one).
 */
export type ConfigRule = "required" | "optional" | "none";

/** The body a route reads: none; up to `routing.max_body_bytes`; up to a limit of its own. */
export type BodyRule = "none" | "max_body_bytes" | { maxBytes: number; tooLarge: string };

/** A path with parameters, each still percent-encoded as it matched. */
export interface PathPattern {
  /** How the docs and the logs write it, e.g. `/v2/models/<model>/infer`. */
  shown: string;
  regex: RegExp;
  /** One per capture group, in order; `what` words a malformed one ("the model name"). */
  params: readonly { name: string; what: string }[];
}

/** What the isolate gives every request. */
export interface AppDeps {
  configSource: ConfigSource;
  random: RandomSource;
  /** This isolate's view of the shared state and its pending reports. */
  state: IsolateState;
  /** This isolate's span exporter (docs/telemetry.md); createApp makes one when absent. */
  exporter?: SpanExporter;
}

type SnapshotFor<C extends ConfigRule> = C extends "required" ? ConfigSnapshot : C extends "optional" ? ConfigSnapshot | null : null;

/** What a handler receives: the request as the preamble opened it. */
export interface Call<C extends ConfigRule = ConfigRule> {
  request: Request;
  env: Env;
  ctx: ExecutionContext;
  deps: AppDeps;
  /** The route's error style. */
  errors: ErrorStyle;
  state: C extends "none" ? null : ConfigState;
  snapshot: SnapshotFor<C>;
  /** The body within its limit; empty for routes that read none. */
  body: Uint8Array;
  /** The path's parameters, percent-decoded. */
  params: Readonly<Record<string, string>>;
  startedAt: number;
  /** The request carried the admin token (checked by the preamble). */
  admin: boolean;
  /** Whom the request's client key names (absent: no client keys configured, or a route without the client check). */
  principal?: Principal | undefined;
  /** The request's server span, on a traced route with a trace context (docs/telemetry.md). */
  trace?: Span;
}

export interface SurfaceRoute<C extends ConfigRule = ConfigRule> {
  methods: readonly string[];
  path: string | PathPattern;
  group: SurfaceGroup;
  config: C;
  auth: AuthRule;
  /** Its requests get a server span, and a trace (docs/telemetry.md): the routes that call a model. */
  traced?: boolean;
  /** `max_body_bytes` needs the config that sets it. */
  body: C extends "required" ? BodyRule : Exclude<BodyRule, "max_body_bytes">;
  handle(call: Call<C>): Promise<Response> | Response;
}

/** Who answers the paths under a prefix that no route matches (a 404 in the group's shape). */
export interface UnknownPaths {
  /** The path itself and everything under it ("/" is every path). */
  prefix: string;
  group: SurfaceGroup;
  message(path: string): string;
}

/** A route as the table holds it: typed against its own config rule where it is declared. */
export function route<C extends ConfigRule>(declared: SurfaceRoute<C>): SurfaceRoute {
  return declared as unknown as SurfaceRoute;
}

/** `POST /v1/chat/completions`, `POST /graphs/<name>`: how logs and docs name a route. */
export function routeName(r: SurfaceRoute): string {
  return `${r.methods.join(",")} ${typeof r.path === "string" ? r.path : r.path.shown}`;
}
