/**
 * The house rules, checked by `npm test` (tools/layers/check.mjs runs dependency-cruiser
 * with these, then looks for folder-level cycles). docs/architecture.md explains them.
 *
 *   lib        src/lib        general pieces; know nothing of Switchyard
 *   core       src/core       pure: config, picking, health, pools, RouteWise, graphs, upstream rules
 *   app        src/app        the model-call layer, the attempt engine, the state clients
 *   platform   src/platform, src/index.ts   surfaces, KV config, the Durable Objects, the Worker's env
 *   tools      tools/, bench/, bin/   Node-only: CLI, fake servers, benches; never part of the Worker
 *
 * Imports run one way: lib <- core <- app <- platform <- tools.
 */
const LIB = "^src/lib/";
const CORE = "^src/core/";
const APP = "^src/app/";
const TOOLS = "^(tools/|bench/|bin/)";

module.exports = {
  forbidden: [
    { name: "no-circular", severity: "error", comment: "No import circle, type-only imports included.", from: {}, to: { circular: true } },
    { name: "lib-is-general", severity: "error", comment: "lib knows nothing of Switchyard: it imports only lib.", from: { path: LIB }, to: { path: "^(src|tools|bench)/", pathNot: LIB } },
    { name: "core-is-pure", severity: "error", comment: "core imports lib and core only.", from: { path: CORE }, to: { path: "^(src|tools|bench)/", pathNot: `(${LIB})|(${CORE})` } },
    { name: "core-has-no-platform", severity: "error", comment: "core takes no env, stubs or runtime modules.", from: { path: `(${LIB})|(${CORE})` }, to: { path: "^cloudflare:" } },
    { name: "app-below-platform", severity: "error", comment: "app talks to the platform through its own narrow interfaces.", from: { path: APP }, to: { path: "^(src|tools|bench)/", pathNot: `(${LIB})|(${CORE})|(${APP})` } },
    { name: "worker-not-tools", severity: "error", comment: "The Worker never imports the Node tools.", from: { path: "^src/" }, to: { path: TOOLS } },
    { name: "no-tests-in-code", severity: "error", comment: "Code never imports tests.", from: { path: "^(src|tools|bench)/" }, to: { path: "^test/" } },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^node_modules|^\\.switchyard)" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.node.json" },
    enhancedResolveOptions: { extensions: [".ts", ".mjs", ".js", ".json"] },
  },
};
