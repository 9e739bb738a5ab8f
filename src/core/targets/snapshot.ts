/**
 * A validated config version with everything the request path derives from it: the model
 * table (pools, RouteWise provider sets, graphs), the pools' specs for their objects,
 * compiled graphs and header patterns. Built once per version, in the isolate that loads it.
 */
import type { Redactions } from "../config/redact";
import type { Config } from "../config/schema";
import type { CompiledGraph } from "../graph/compile";
import { compileGraphs } from "../graph/compile";
import { buildPoolSpecs } from "../pool/spec";
import type { PoolSpec } from "../pool/wire";
import type { RouteWiseSpec } from "../routewise/spec";
import { buildRouteWiseSpecs } from "../routewise/spec";
import { compileHeaderPatterns } from "../upstream/propagate";
import type { ModelRoute, PoolRoute } from "./route-table";
import type { KeyPrincipal } from "../limits/principal";
import { keyPrincipals } from "../limits/principal";
import type { LimitTable } from "../limits/rules";
import { buildLimitTable } from "../limits/rules";
import { buildPoolRoutes, buildRouteTable } from "./route-table";

export interface ConfigSnapshot {
  version: string;
  source: string;
  config: Config;
  routes: Map<string, ModelRoute>;
  /** Each pool's replicas (graph steps that target a pool route through these). */
  pools: Map<string, PoolRoute>;
  /** What each pool's Durable Object is told, per pool name. */
  poolSpecs: Map<string, PoolSpec>;
  /** Inference graphs by name, ready to run. */
  graphs: Map<string, CompiledGraph>;
  /** RouteWise models by name (../routewise/spec.ts). */
  routewise: Map<string, RouteWiseSpec>;
  /** Models whose target is a graph: model -> graph name. */
  graphModels: Map<string, string>;
  /** graph_settings.propagate_headers, compiled. */
  headerPatterns: RegExp[];
  clientKeyDigests: Uint8Array[];
  /** The principal of each digest of clientKeyDigests, in its order (../limits/principal.ts). */
  keyPrincipals: KeyPrincipal[];
  /** The limit rules, by scope (../limits/rules.ts). */
  limits: LimitTable;
  /** How this version's secrets are kept out of what is shown (/routing). */
  redactions: Redactions;
  loadedAt: number;
}

export interface SnapshotInput {
  version: string;
  source: string;
  config: Config;
  /** SHA-256 digests of the config's client keys, client_keys then auth.keys (hashed by the loader, ../limits/principal.ts keyEntries). */
  clientKeyDigests: Uint8Array[];
  redactions: Redactions;
  loadedAt: number;
}

export function buildSnapshot(input: SnapshotInput): ConfigSnapshot {
  const { config } = input;
  const pools = buildPoolRoutes(config);
  return {
    ...input,
    pools,
    routes: buildRouteTable(config, pools),
    poolSpecs: buildPoolSpecs(config, input.version, (url) => input.redactions.atRest(url)),
    graphs: compileGraphs(config),
    routewise: buildRouteWiseSpecs(config, input.version, (url) => input.redactions.atRest(url)),
    graphModels: new Map(Object.entries(config.models).flatMap(([model, t]) => (t.graph !== undefined ? [[model, t.graph] as const] : []))),
    headerPatterns: headerPatterns(config.graph_settings.propagate_headers),
    keyPrincipals: keyPrincipals(config),
    limits: buildLimitTable(config),
  };
}

function headerPatterns(patterns: string[]): RegExp[] {
  const compiled = compileHeaderPatterns(patterns);
  return compiled.ok ? compiled.regexes : []; // validation already refused invalid patterns
}
