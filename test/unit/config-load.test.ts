import { buildPoolSpecs } from "../../src/core/pool/spec";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";
import { describeConfig } from "../../src/core/targets/describe";
import type { LoadResult } from "../../src/core/config/load";
import { DEFAULT_RETRY_ON, DEFAULT_SCRAPE_MS, MIN_HEALTH_CHECK_S, MIN_SCRAPE_MS } from "../../src/core/config/schema";
import { buildRouteTable } from "../../src/core/targets/route-table";
import { exceedsAliasCount, parseYamlDocuments } from "../../src/core/config/yaml";

const NATIVE = `
models:
  llama: { pool: gpu }
  embed: { pool: gpu, upstream_model: bge-small }
pools:
  gpu:
    replicas:
      - { id: local-a, url: "http://10.0.0.1:8000", weight: 3, labels: [local] }
      - { id: remote-a, url: "https://api.example.com/v1", weight: 2, labels: [remote], api_key: "\${REMOTE_KEY}" }
`;

function errorsOf(result: LoadResult): string[] {
  if (result.ok) throw new Error("expected the config to be rejected");
  return result.errors.map((e) => `${e.path}: ${e.message}`);
}

function configOf(result: LoadResult) {
  if (!result.ok) throw new Error(`expected a valid config, got ${JSON.stringify(result.errors)}`);
  return result.config;
}

describe("native config", () => {
  it("loads with defaults filled in and secrets substituted", () => {
    const config = configOf(loadConfig(NATIVE, { REMOTE_KEY: "sk-remote" }));
    expect(config.pools.gpu!.replicas[1]!.api_key).toBe("sk-remote");
    expect(config.pools.gpu!.replicas[0]!.api_key).toBeUndefined();
    expect(config.routing.retry_on).toEqual(DEFAULT_RETRY_ON);
    expect(config.routing.try_timeout_ms).toBe(60_000);
    expect(config.auth.client_keys).toEqual([]);
  });

  it("derives each replica's share of the model's traffic", () => {
    const routes = buildRouteTable(configOf(loadConfig(NATIVE, { REMOTE_KEY: "k" })));
    expect(routes.get("llama")!.replicas.map((r) => [r.id, r.share])).toEqual([["local-a", 0.6], ["remote-a", 0.4]]);
    // A policy whose draw ignores weight shares evenly among the replicas it may pick (weight 0 drains).
    const pool = (policy: string) => `models: { m: { pool: p } }\npools:\n  p:\n    policy: ${policy}\n    replicas: [ { id: a, url: "http://h:1", weight: 3 }, { id: b, url: "http://h:2", weight: 1 }, { id: c, url: "http://h:3", weight: 1 }, { id: d, url: "http://h:4", weight: 0 } ]\n`;
    const shares = (policy: string) => buildRouteTable(configOf(loadConfig(pool(policy), {}))).get("m")!.replicas.map((r) => Number(r.share.toFixed(6)));
    for (const policy of ["power_of_two", "random", "round_robin"]) expect(shares(policy), policy).toEqual([0.333333, 0.333333, 0.333333, 0]);
    for (const policy of ["weighted", "least_loaded", "switchyard"]) expect(shares(policy), policy).toEqual([0.6, 0.2, 0.2, 0]);
    expect(routes.get("embed")!.upstreamModel).toBe("bge-small");
  });

  it("accepts JSON", () => {
    const json = JSON.stringify({ models: { m: { pool: "p" } }, pools: { p: { replicas: [{ id: "r", url: "http://127.0.0.1:1" }] } } });
    expect(configOf(loadConfig(json, {})).pools.p!.replicas[0]!.weight).toBe(1);
  });

  it("names every failing path at once", () => {
    const bad = `
models:
  llama: { pool: gpu }
  ghost: { pool: nowhere }
pools:
  gpu:
    replicas:
      - { id: a, url: "http://10.0.0.1:8000", weight: 1 }
      - { id: b, url: "ftp://10.0.0.2", weight: -1 }
      - { id: a, url: "http://10.0.0.3", colour: blue }
routing: { try_timeout_ms: 0 }
`;
    expect(errorsOf(loadConfig(bad, {}))).toEqual([
      "models.ghost.pool: unknown pool \"nowhere\"",
      "pools.gpu.replicas[1].url: must be an absolute http(s) URL without query or fragment",
      "pools.gpu.replicas[1].weight: must be >= 0",
      "pools.gpu.replicas[2]: unknown key \"colour\"",
      "pools.gpu.replicas[2].id: duplicate replica id \"a\"",
      "routing.try_timeout_ms: must be > 0",
    ]);
  });

  it("reports a duplicate replica id at its path", () => {
    const dup = `
models: { m: { pool: p } }
pools: { p: { replicas: [ { id: a, url: "http://h:1" }, { id: a, url: "http://h:2" } ] } }
`;
    expect(errorsOf(loadConfig(dup, {}))).toEqual(['pools.p.replicas[1].id: duplicate replica id "a"']);
  });

  it("reports missing sections and wrong types", () => {
    expect(errorsOf(loadConfig("pools: {}", {}))).toEqual(["(document): routes nothing: define models (with pools) or inference graphs"]);
    expect(errorsOf(loadConfig("models: {m: {pool: p}}\npools: {p: {replicas: []}}", {}))).toEqual(["pools.p.replicas: must have at least 1 item"]);
    expect(errorsOf(loadConfig("models: []\npools: {}", {}))).toEqual(["models: must be a record, got a list"]);
  });

  it("rejects YAML syntax errors, empty documents and non-mappings", () => {
    expect(errorsOf(loadConfig("models: [unclosed", {}))[0]).toMatch(/^\(document\): /);
    expect(errorsOf(loadConfig("   \n", {}))).toEqual(["(document): is empty"]);
    expect(errorsOf(loadConfig("- a\n- b", {}))).toEqual(["(document): must be a mapping at the top level"]);
    expect(errorsOf(loadConfig("a: 1\na: 2", {}))).toEqual(["(document): duplicated mapping key at line 2, column 1"]);
  });
});

describe("${VAR} substitution", () => {
  const doc = (url: string) => `
models: { m: { pool: p } }
pools: { p: { replicas: [ { id: r, url: "${url}", api_key: "\${API_KEY}" } ] } }
`;

  it("uses the default when the variable is unset or empty", () => {
    const config = configOf(loadConfig(doc("${UPSTREAM:-http://127.0.0.1:9000}"), { API_KEY: "k", UPSTREAM: "" }));
    expect(config.pools.p!.replicas[0]!.url).toBe("http://127.0.0.1:9000");
  });

  it("prefers the env value and substitutes inside longer strings", () => {
    const config = configOf(loadConfig(doc("http://${HOST}:8000"), { API_KEY: "k", HOST: "gpu-7" }));
    expect(config.pools.p!.replicas[0]!.url).toBe("http://gpu-7:8000");
  });

  it("names the variable and path of a missing secret, never a value", () => {
    const errors = errorsOf(loadConfig(doc("http://h:1"), { OTHER: "sk-do-not-print" }));
    expect(errors).toEqual(["pools.p.replicas[0].api_key: ${API_KEY} is not set and has no default"]);
    expect(errors.join()).not.toContain("sk-do-not-print");
  });

  it("refuses a ${ that starts no reference instead of sending it as literal text", () => {
    for (const bad of ["${UP-KEY}", "${1BAD}", "${X:=d}", "${X:?err}", "${}", "${KEY", "sk-${KEY}-${", "${KEY:-${FALLBACK}}", "${NOPE:-${KEY}}"]) {
      const doc = `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: "http://h:1", api_key: ${JSON.stringify(bad)} } ] } }\n`;
      expect(errorsOf(loadConfig(doc, { KEY: "k" })), bad).toEqual([expect.stringMatching(/^pools\.p\.replicas\[0\]\.api_key: holds a \$\{ that starts no reference/)]);
    }
    expect(loadConfig(`models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: "http://h:1", api_key: "a$b{c}" } ] } }\n`, {}).ok).toBe(true); // no "${" at all
  });

  it("defers unresolved variables to warnings for the CLI", () => {
    const result = loadConfig(doc("${UPSTREAM}"), {}, { unresolvedVars: "defer" });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.warnings.map((w) => w.path).sort()).toEqual(["pools.p.replicas[0].api_key", "pools.p.replicas[0].url"]);
  });
});

describe("client keys", () => {
  const doc = (key: string) => `
models: { m: { pool: p } }
pools: { p: { replicas: [ { id: r, url: "http://h:1" } ] } }
auth: { client_keys: ["${key}"] }
`;
  it("accepts sha256 digests and ${VAR} secrets", () => {
    expect(loadConfig(doc(`sha256:${"ab".repeat(32)}`), {}).ok).toBe(true);
    expect(loadConfig(doc("${CLIENT_KEY}"), { CLIENT_KEY: "sk-1" }).ok).toBe(true);
  });
  it("refuses a raw key written into the config", () => {
    expect(errorsOf(loadConfig(doc("sk-raw-key"), {}))[0]).toMatch(/^auth\.client_keys\[0\]: must be "sha256:<64 lowercase hex>" or a \$\{VAR\} secret/);
  });
  it("refuses a raw key written as a ${VAR}'s default, whether the variable is set or not; a digest default is fine", () => {
    for (const vars of [{}, { CLIENT_KEY: "sk-from-env" }]) {
      expect(errorsOf(loadConfig(doc("${CLIENT_KEY:-sk-raw-default}"), vars))).toEqual([
        'auth.client_keys[0]: the default of ${CLIENT_KEY} must be a "sha256:<64 lowercase hex>" digest, or be left out (${CLIENT_KEY} alone): a raw key written as a default is still a raw key in the config',
      ]);
    }
    expect(loadConfig(doc(`\${CLIENT_KEY:-sha256:${"ab".repeat(32)}}`), {}).ok).toBe(true);
  });
  it("refuses a ${VAR} key whose value looks like a digest but is not sha256:<64 lowercase hex>, without echoing it", () => {
    const hex = "ab".repeat(32);
    for (const value of [`sha256:${hex.slice(1)}`, `sha256:${hex}0`, `sha256:${"zz".repeat(32)}`, `sha256:${hex.toUpperCase()}`, `SHA256:${hex}`, `sha256:${hex}\n`]) {
      const errors = errorsOf(loadConfig(doc("${CLIENT_KEY}"), { CLIENT_KEY: value }));
      expect(errors, value).toEqual(['auth.client_keys[0]: the value of ${CLIENT_KEY} starts with "sha256:" but is not a valid digest, "sha256:<64 lowercase hex>"']);
    }
    // A value of just "sha256:" is refused too (its message is redacted where it quotes that value).
    expect(errorsOf(loadConfig(doc("${CLIENT_KEY}"), { CLIENT_KEY: "sha256:" }))).toEqual([expect.stringMatching(/^auth\.client_keys\[0\]: the value of \$\{CLIENT_KEY\}/)]);
    expect(loadConfig(doc("${CLIENT_KEY}"), { CLIENT_KEY: `sha256:${hex}` }).ok).toBe(true);
  });
  it("refuses a literal sha256: entry that is not exactly 64 lowercase hex digits", () => {
    const hex = "ab".repeat(32);
    for (const value of [`sha256:${hex.slice(2)}`, `sha256:${"zz".repeat(32)}`, `SHA256:${hex}`, `sha256:${hex} `]) {
      expect(errorsOf(loadConfig(doc(value), {})), value).toEqual(['auth.client_keys[0]: is not a valid digest, "sha256:<64 lowercase hex>"']);
    }
  });
});

describe("seed 004 routing.yaml", () => {
  const SEED = `
routing_strategy: fixed
routing_parameter:
  local_fraction: 0.6
  timeout: 2
  health_check: 30
logging:
  output: output.log
local_deployment:
  - endpoint: \${LOCAL_DEPLOYMENT_URL:-http://localhost:8000}
    models: [llama-3-8b, qwen]
  - endpoint: http://localhost:8001
    models: [llama-3-8b]
remote_deployment:
  - endpoint: https://api.remote.example/v1
    models: [llama-3-8b]
    api_key: \${REMOTE_KEY:-none}
`;

  it("is accepted as it is: 60% of each model to its local endpoints, 40% remote", () => {
    const config = configOf(loadConfig(SEED, {}));
    const routes = buildRouteTable(config);
    const llama = routes.get("llama-3-8b")!;
    expect(llama.replicas.map((r) => [r.id, r.labels[0], Number(r.share.toFixed(6))])).toEqual([
      ["local-0", "local", 0.3],
      ["local-1", "local", 0.3],
      ["remote-0", "remote", 0.4],
    ]);
    expect(llama.replicas[0]!.url).toBe("http://localhost:8000");
    expect(config.routing.try_timeout_ms).toBe(2000);
    expect(config.pools["llama-3-8b"]!.health_check).toBe(30);
  });

  it("keeps the seed's timeout beside a routing: section of Switchyard's own, which still wins where it says so, and checks that section with its paths", () => {
    const beside = configOf(loadConfig(`${SEED}routing: { public_view: true, deadline_ms: 10000 }\n`, {}));
    expect(beside.routing).toMatchObject({ try_timeout_ms: 2000, deadline_ms: 10000, public_view: true });
    expect(configOf(loadConfig(`${SEED}routing: { try_timeout_ms: 500 }\n`, {})).routing.try_timeout_ms).toBe(500);
    expect(errorsOf(loadConfig(`${SEED}routing: { deadline_ms: 1000 }\n`, {}))).toEqual(["routing.try_timeout_ms: must be <= routing.deadline_ms"]);
    expect(errorsOf(loadConfig(`${SEED}routing: { max_attempts: many }\n`, {}))).toEqual([expect.stringMatching(/^routing\.max_attempts: must be a number/)]);
  });

  it("sends a model with endpoints on one side only entirely there", () => {
    const qwen = buildRouteTable(configOf(loadConfig(SEED, {}))).get("qwen")!;
    expect(qwen.replicas.map((r) => [r.id, r.share])).toEqual([["local-0", 1]]);
  });

  it("excludes remote endpoints at local_fraction 1 (weight 0)", () => {
    const llama = buildRouteTable(configOf(loadConfig(SEED.replace("local_fraction: 0.6", "local_fraction: 1"), {}))).get("llama-3-8b")!;
    expect(llama.candidates.map((r) => r.id)).toEqual(["local-0", "local-1"]);
  });

  it("names seed paths in its errors", () => {
    const bad = SEED.replace("local_fraction: 0.6", "local_fraction: 1.5").replace("routing_strategy: fixed", "routing_strategy: adaptive");
    expect(errorsOf(loadConfig(bad, {}))).toEqual([
      'routing_parameter.local_fraction: must be <= 1',
      'routing_strategy: must be one of "fixed"',
    ]);
  });
});

describe("describeConfig", () => {
  it("summarises models, shares and exclusions", () => {
    const text = describeConfig(configOf(loadConfig(NATIVE.replace("weight: 2", "weight: 0"), { REMOTE_KEY: "k" })));
    expect(text).toContain("llama -> pool gpu");
    expect(text).toContain("local-a [local] 100.0%");
    expect(text).toContain("remote-a [remote] 0.0% (excluded: weight 0)");
    expect(text).not.toContain("\"k\"");
  });
});

describe("shared-state options", () => {
  const doc = (poolExtra: string, routing = "") => `
models: { m: { pool: p } }
pools:
  p:
    ${poolExtra}
    replicas: [ { id: r, url: "http://h:1" } ]
${routing}`;

  it("defaults: weighted, fail-closed, circuits on, affinity on with a 300 s TTL", () => {
    const config = configOf(loadConfig(doc(""), {}));
    expect(config.pools.p).toMatchObject({ policy: "weighted", fail_open: false, health_check: 0, health_path: "/health" });
    expect(config.pools.p!.circuit).toEqual({ consecutive_failures: 5, error_ratio: 0.5, window_ms: 60_000, min_requests: 10, cooldown_ms: 30_000, max_cooldown_ms: 300_000, half_open_probes: 1 });
    expect(config.routing.affinity).toEqual({ enabled: true, ttl_s: 300 });
    expect(config.routing.shared_state).toBe(true);
  });

  it("scoring, locality, caps and priorities: defaults, overrides and the failing path of a bad value", () => {
    const config = configOf(loadConfig(doc("policy: switchyard\n    scoring: { weights: { queue: 0, kv_cache: 5 }, saturation: { kv_usage: 0.9 } }"), {}));
    expect(config.pools.p).toMatchObject({ policy: "switchyard", locality: [], max_ongoing_requests: 0, shed_retry_after_s: 1 });
    expect(config.pools.p!.scoring.index_capacity_blocks).toBeUndefined(); // sized from each engine (index-sizing.ts)
    const spec = buildPoolSpecs(config, "v1").get("p")!;
    expect(spec.indexCapacityBlocks).toBeNull();
    const fixed = configOf(loadConfig(doc("policy: switchyard\n    scoring: { index_capacity_blocks: 2048 }"), {}));
    expect(buildPoolSpecs(fixed, "v1").get("p")!.indexCapacityBlocks).toBe(2048);
    expect(spec.scoring.switchyard.weights).toEqual({ inflight: 2, queue: 0, kvCache: 5, lora: 1, locality: 1 });
    expect(spec.scoring.saturation).toEqual({ queueDepth: 5, kvUsage: 0.9 });
    expect(spec.scoring.stalenessMs).toBe(5_000); // metrics.stale_ms
    expect(errorsOf(loadConfig(doc("scoring: { saturation: { kv_usage: 2 }, weights: { prefix: -1 } }\n    locality: [city]\n    max_ongoing_requests: -1"), {}))).toEqual([
      'pools.p.locality[0]: must be one of "colo", "country", "continent", "region"',
      "pools.p.max_ongoing_requests: must be >= 0",
      "pools.p.scoring.saturation.kv_usage: must be <= 1",
      "pools.p.scoring.weights.prefix: must be >= 0",
    ]);
  });

  it("scrapes a pool whose policy routes on engine metrics every DEFAULT_SCRAPE_MS without a scrape_ms; scrape_ms: 0 turns it off", () => {
    const scrapeMs = (poolExtra: string) => buildPoolSpecs(configOf(loadConfig(doc(poolExtra), {})), "v1").get("p")!.metrics.scrapeMs;
    expect(DEFAULT_SCRAPE_MS).toBe(1_000);
    expect(scrapeMs("policy: switchyard")).toBe(DEFAULT_SCRAPE_MS);
    expect(scrapeMs("policy: gaie")).toBe(DEFAULT_SCRAPE_MS);
    expect(scrapeMs('policy: switchyard\n    metrics: { path: "/engine/metrics" }')).toBe(DEFAULT_SCRAPE_MS);
    expect(scrapeMs("policy: switchyard\n    metrics: { scrape_ms: 0 }")).toBe(0);
    expect(scrapeMs("policy: switchyard\n    metrics: { scrape_ms: 250 }")).toBe(250);
    for (const policy of ["weighted", "least_loaded", "power_of_two", "random", "round_robin", "ray_prefix", "sglang_cache_aware"]) expect(scrapeMs(`policy: ${policy}`), policy).toBe(0);
    expect(scrapeMs("policy: round_robin\n    metrics: { scrape_ms: 500 }")).toBe(500);
    expect(errorsOf(loadConfig(doc("policy: switchyard\n    metrics: { scrape_ms: 100 }"), {}))).toEqual([`pools.p.metrics.scrape_ms: must be 0 (off) or >= ${MIN_SCRAPE_MS}`]);
  });

  it("refuses an upstream_model of . or .., from which KServe paths would leave the upstream's path", () => {
    const model = (m: string) => `models: { dd: { pool: p, upstream_model: "${m}" } }\npools: { p: { replicas: [ { id: a, url: "http://h:1" } ] } }\n`;
    for (const bad of [".", ".."]) expect(errorsOf(loadConfig(model(bad), {}))).toEqual(['models.dd.upstream_model: must not be "." or "..": KServe paths are built from it']);
    expect(loadConfig(model("meta-llama/Llama-3-8B"), {}).ok).toBe(true);
  });

  it("names a YAML .nan or .inf as what it is, not as null", () => {
    const pool = (w: string) => `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: a, url: "http://h:1", weight: ${w} } ] } }\n`;
    expect(errorsOf(loadConfig(pool(".nan"), {}))).toEqual(["pools.p.replicas[0].weight: must be a number, got NaN"]);
    expect(errorsOf(loadConfig(pool(".inf"), {}))).toEqual(["pools.p.replicas[0].weight: must be a number, got Infinity"]);
  });

  it("takes health_check 0 (off) or at least MIN_HEALTH_CHECK_S: each probe also times out after the period", () => {
    const pool = (hc: number) => `models: { m: { pool: p } }\npools: { p: { health_check: ${hc}, replicas: [ { id: a, url: "http://h:1" } ] } }\n`;
    expect(loadConfig(pool(0), {}).ok && loadConfig(pool(MIN_HEALTH_CHECK_S), {}).ok && loadConfig(pool(30), {}).ok).toBe(true);
    expect(errorsOf(loadConfig(pool(0.001), {}))).toEqual([`pools.p.health_check: must be 0 (off) or >= ${MIN_HEALTH_CHECK_S}`]);
    expect(errorsOf(loadConfig("routing_strategy: fixed\nrouting_parameter: { local_fraction: 0.6, timeout: 2, health_check: 0.5 }\nlocal_deployment: [ { endpoint: \"http://h:1\", models: [m] } ]\n", {}))).toEqual([`routing_parameter.health_check: must be 0 (off) or >= ${MIN_HEALTH_CHECK_S}`]);
  });

  it("names the failing path of a bad policy, circuit or affinity setting", () => {
    expect(errorsOf(loadConfig(doc("policy: fastest"), {}))).toEqual(['pools.p.policy: must be one of "weighted", "least_loaded", "power_of_two", "random", "round_robin", "gaie", "ray_prefix", "sglang_cache_aware", "switchyard"']);
    expect(errorsOf(loadConfig(doc("circuit: { error_ratio: 1.5, cooldown_ms: 5000, max_cooldown_ms: 1000 }"), {}))).toEqual([
      "pools.p.circuit.error_ratio: must be <= 1",
      "pools.p.circuit.max_cooldown_ms: must be >= cooldown_ms",
    ]);
    expect(errorsOf(loadConfig(doc("circuit: { cooldown_ms: 5000, max_cooldown_ms: 1000 }"), {}))).toEqual(["pools.p.circuit.max_cooldown_ms: must be >= cooldown_ms"]);
    expect(errorsOf(loadConfig(doc("health_path: health"), {}))).toEqual(["pools.p.health_path: must start with /"]);
    expect(errorsOf(loadConfig(doc("", "routing: { affinity: { ttl_s: 0 } }"), {}))).toEqual(["routing.affinity.ttl_s: must be > 0"]);
  });
});

describe("YAML expansion bounds", () => {
  // Billion laughs: each level holds nine aliases of the one above, 9^8 strings in all.
  const levels = "abcdefgh".split("");
  const BOMB = [
    `models: { m: { pool: p } }`,
    `pools: { p: { replicas: [ { id: r, url: "http://h:1" } ] } }`,
    `x-lol: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]`,
    ...levels.slice(1).map((level, i) => `x-${level}: &${level} [${Array(9).fill(`*${levels[i]}`).join(",")}]`),
  ].join("\n");

  it("refuses an alias bomb with a config error, not an exception", () => {
    const started = Date.now();
    const errors = errorsOf(loadConfig(BOMB, {}));
    expect(errors).toEqual([expect.stringMatching(/^\(document\): expands more than 100 aliases: .*alias bomb/)]);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("refuses a few aliases of one large node once the expansion passes its bound", () => {
    const big = "x".repeat(100_000);
    const doc = `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: "http://h:1" } ] } }\nx-big: &big "${big}"\nx-copies: [${Array(60).fill("*big").join(",")}]\n`;
    expect(errorsOf(loadConfig(doc, {}))).toEqual(["(document): is more than 4194304 characters once its aliases are expanded"]);
  });

  it("still accepts ordinary anchors and aliases", () => {
    const doc = `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: "http://h:1", labels: &l [gpu] }, { id: s, url: "http://h:2", labels: *l } ] } }\n`;
    expect(configOf(loadConfig(doc, {})).pools.p!.replicas[1]!.labels).toEqual(["gpu"]);
  });

  // js-yaml hands every alias the anchor's own object, so the count is taken on the parsed value.
  const bounded = (text: string) => {
    const parsed = parseYamlDocuments(text);
    return parsed.ok ? "ok" : parsed.errors.map((e) => `${e.path}: ${e.message}`);
  };
  const TOO_MANY = expect.stringMatching(/: expands more than 100 aliases: /);
  const aliasesOf = (n: number) => `l: &l [gpu]\nuses: [${Array(n).fill("*l").join(",")}]\n`;
  const nested = (n: number) => `l: &l [gpu]\nnine: &nine [${Array(9).fill("*l").join(",")}]\nuses: [${Array(n).fill("*nine").join(",")}]\n`;

  it("counts aliases of lists and mappings up to 100", () => {
    expect(bounded(aliasesOf(100))).toBe("ok");
    expect(bounded(aliasesOf(101))).toEqual([TOO_MANY]);
    expect(bounded(`m: &m { a: 1 }\nuses: [${Array(101).fill("*m").join(",")}]\n`)).toEqual([TOO_MANY]);
  });

  it("counts an alias once for every alias inside what it points at", () => {
    // nine holds 9 aliases; each alias of it adds itself and its 9: 9 + 9 * 10 = 99, then 109.
    expect(bounded(nested(9))).toBe("ok");
    expect(bounded(nested(10))).toEqual(["(document): expands more than 100 aliases: anchors and aliases nested to multiply (a \"billion laughs\" alias bomb) are refused"]);
  });

  it("counts in each document of a stream on its own, and names the document", () => {
    expect(bounded(`${aliasesOf(100)}---\n${aliasesOf(100)}`)).toBe("ok");
    expect(bounded(`${aliasesOf(100)}---\n${aliasesOf(101)}`)).toEqual([expect.stringMatching(/^documents\[1\]: expands more than 100 aliases: /)]);
  });

  it("leaves aliases of scalars to the size bound: each is the scalar again", () => {
    expect(bounded(`s: &s ${"y".repeat(50)}\nuses: [${Array(500).fill("*s").join(",")}]\n`)).toBe("ok");
  });
});

describe("exceedsAliasCount", () => {
  it("counts every appearance of a shared object after its first, with what it holds", () => {
    const leaf = ["gpu"];
    const nine = Array(9).fill(leaf);
    expect(exceedsAliasCount({ leaf, uses: Array(100).fill(leaf) }, 100)).toBe(false);
    expect(exceedsAliasCount({ leaf, uses: Array(101).fill(leaf) }, 100)).toBe(true);
    expect(exceedsAliasCount({ leaf, nine, uses: [nine, nine] }, 28)).toBe(true); // 9 + 2 * (1 + 9) = 29
    expect(exceedsAliasCount({ leaf, nine, uses: [nine, nine] }, 29)).toBe(false);
    expect(exceedsAliasCount({ 1: leaf, b: leaf }, 0)).toBe(true); // either appearance may be the anchor's
    expect(exceedsAliasCount("scalar", 0)).toBe(false);
  });

  it("walks a deep bomb without recursion and stops at the limit", () => {
    let level: unknown = ["lol"];
    for (let i = 0; i < 5000; i++) level = [level, level];
    expect(exceedsAliasCount({ level }, 100)).toBe(true);
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(exceedsAliasCount(deep, 100)).toBe(false);
  });
});

describe("YAML as js-yaml reads it (YAML 1.2 core schema)", () => {
  const one = (text: string) => {
    const parsed = parseYamlDocuments(text);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    return parsed.documents[0];
  };
  const issues = (text: string) => {
    const parsed = parseYamlDocuments(text);
    return parsed.ok ? [] : parsed.errors.map((e) => `${e.path}: ${e.message}`);
  };

  it("keeps yes/on and dates as strings and reads core scalars", () => {
    expect(one("a: yes\nb: on\nc: 2001-12-14\nd: 2001-12-14t21:59:43.10-05:00\ne: ~\nf: True\ng: 0o17\nh: 0x1F\ni: .inf\nj: 017\nk: .5\nl: 1e3\n")).toEqual({
      a: "yes", b: "on", c: "2001-12-14", d: "2001-12-14t21:59:43.10-05:00", e: null, f: true, g: 15, h: 31, i: Infinity, j: 17, k: 0.5, l: 1000,
    });
  });

  it("reads << as an ordinary key, not a merge", () => {
    expect(one("base: &b { x: 1 }\nd: { <<: *b, y: 2 }\n")).toEqual({ base: { x: 1 }, d: { "<<": { x: 1 }, y: 2 } });
  });

  it("refuses tags outside the core schema, naming the tag and the line", () => {
    expect(issues("a: !!timestamp 2001-12-14\n")).toEqual(["(document): unknown tag !<tag:yaml.org,2002:timestamp> at line 1, column 26"]);
    expect(issues("a:\n  - !foo bar\n")).toEqual(["(document): unknown tag !<!foo> at line 2, column 13"]);
  });

  it("names the line of a syntax error, and its document in a stream", () => {
    expect(issues("models: [unclosed")).toEqual(["(document): unexpected end of the stream within a flow collection at line 2, column 1"]);
    expect(issues("a:\n\tb: 1\n")).toEqual(["(document): tab characters must not be used in indentation at line 2, column 1"]);
    expect(issues("a: 1\n---\nb: 'open\n---\nc: 3\n")).toEqual(["documents[1]: unexpected end of the document within a single quoted scalar at line 4, column 1"]);
    expect(issues("a: *nope\n---\nb: 2\n")).toEqual(['documents[0]: unidentified alias "nope" at line 1, column 9']);
  });

  it("refuses a key written twice, and nesting deeper than 100", () => {
    expect(issues("a:\n  b: 1\n  b: 2\n")).toEqual(["(document): duplicated mapping key at line 3, column 3"]);
    expect(one(`a: ${"[".repeat(99)}${"]".repeat(99)}\n`)).toBeDefined();
    expect(issues(`a: ${"[".repeat(100)}${"]".repeat(100)}\n`)).toEqual([expect.stringMatching(/^\(document\): nesting exceeded maxDepth \(100\) at line 1, column /)]);
  });
});

describe("no secret in config errors", () => {
  const SECRET = "sk-live-9f8e7d6c5b4a";
  const USERINFO_PW = "hunter2-pw-of-userinfo";
  const ADMIN = "admin-token-0123456789";

  it("never echoes a ${VAR} value: messages show the reference instead", () => {
    const pool = (replicas: string) => `pools:\n  p:\n    replicas:\n${replicas}`;
    const one = `      - { id: r, url: "http://h:1" }\n`;
    const graph = (steps: string) => `models: { m: { pool: p } }\n${pool(one)}graphs:\n  gr:\n    nodes:\n      root:\n        routerType: Sequence\n        steps:\n${steps}`;
    const cases: [doc: string, vars: Record<string, string>, expected: string][] = [
      [`models: { m: { pool: "\${POOL}" } }\n${pool(one)}`, { POOL: SECRET }, 'models.m.pool: unknown pool "${POOL}"'],
      [`models: { m: { graph: "\${GRAPH}" } }\n${pool(one)}`, { GRAPH: SECRET }, 'models.m.graph: unknown graph "${GRAPH}"'],
      [`models: { m: { pool: p } }\n${pool(`${one}      - { id: "\${RID}", url: "http://h:2" }\n      - { id: "\${RID}", url: "http://h:3" }\n`)}`, { RID: SECRET }, 'pools.p.replicas[2].id: duplicate replica id "${RID}"'],
      [`models: { m: { pool: p } }\n${pool(`      - { id: r, url: "http://h:1", weight: "\${WEIGHT}" }\n`)}`, { WEIGHT: SECRET }, "pools.p.replicas[0].weight: must be a number, got a string"],
      [`models: { m: { pool: p } }\n${pool(one)}graph_settings: { propagate_headers: ["\${HEADER}"] }\n`, { HEADER: `(${SECRET}` }, "graph_settings.propagate_headers[0]: invalid regular expression"],
      [graph(`          - { serviceUrl: "http://h:3" }\n          - { serviceUrl: "http://h:4", condition: "\${COND}" }\n`), { COND: `${SECRET}.#(` }, "graphs.gr.nodes.root.steps[1].condition: invalid GJSON condition"],
      [graph(`          - { serviceName: "\${SERVICE}" }\n`), { SERVICE: SECRET }, 'graphs.gr.nodes.root.steps[0].serviceName: unknown service "${SERVICE}" (add it under services)'],
      [graph(`          - { serviceUrl: "http://h:3", name: "\${STEP}" }\n          - { serviceUrl: "http://h:4", name: "\${STEP}" }\n`), { STEP: SECRET }, 'contains more than one step with name "${STEP}"'],
    ];
    for (const [doc, vars, expected] of cases) {
      const errors = errorsOf(loadConfig(doc, vars));
      expect(errors.join("\n"), expected).not.toContain(SECRET);
      expect(errors.join("\n"), expected).toContain(expected);
    }
  });

  it("never echoes a number given where a string belongs: an all-digit key left unquoted in YAML", () => {
    const doc = `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: "http://h:1", api_key: 84730019283746512 } ] } }\n`;
    const errors = errorsOf(loadConfig(doc, {}));
    expect(errors).toEqual(["pools.p.replicas[0].api_key: must be a string, got a number"]);
    expect(errorsOf(loadConfig(`models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: "http://h:1", weight: true } ] } }\n`, {}))).toEqual(["pools.p.replicas[0].weight: must be a number, got boolean true"]); // elsewhere the value helps, and is no secret
  });

  it("takes names for what they are, not for what every object inherits: toString is unknown until defined, __proto__ is refused", () => {
    const replicas = '{ replicas: [ { id: a, url: "http://h:1" } ] }';
    expect(errorsOf(loadConfig(`models: { m1: { pool: toString }, m2: { pool: p } }\npools: { p: ${replicas} }\n`, {}))).toEqual(['models.m1.pool: unknown pool "toString"']);
    expect(errorsOf(loadConfig(`models: { m: { graph: constructor } }\npools: { p: ${replicas} }\n`, {}))).toEqual(['models.m.graph: unknown graph "constructor"']);
    const named = loadConfig(`models: { toString: { pool: constructor } }\npools: { constructor: ${replicas} }\n`, {});
    expect(named.ok && Object.keys(named.config.models)).toEqual(["toString"]);
    expect(errorsOf(loadConfig(`pools: { __proto__: ${replicas} }\nmodels: { m: { pool: __proto__ } }\n`, {}))).toEqual(['pools.__proto__: "__proto__" cannot be a name']);
    expect(errorsOf(loadConfig('{"models": {"__proto__": {"pool": "p"}, "m": {"pool": "p"}}, "pools": {"p": {"replicas": [{"id": "a", "url": "http://h:1"}]}}}', {}))).toEqual(['models.__proto__: "__proto__" cannot be a name']);
  });

  it("takes a native graph's name only as one path segment of /graphs/<name>", () => {
    const graphs = (key: string) => `graphs:\n  ${JSON.stringify(key)}:\n    nodes:\n      root:\n        routerType: Sequence\n        steps: [ { serviceUrl: "http://h:3" } ]\n`;
    expect(loadConfig(graphs("Iris_v2.1"), {}).ok).toBe(true);
    for (const bad of ["team/iris", "", "-iris", "has space"]) {
      expect(errorsOf(loadConfig(graphs(bad), {})), bad).toEqual([expect.stringMatching(/^graphs\.?.*: graph name must be 1-128 characters .*one segment of \/graphs\/<name>/)]);
    }
    // Every named map says what a name may be, not zod's "Invalid key in record".
    expect(errorsOf(loadConfig(`models: { "has space": { pool: p } }\npools: { p: { replicas: [ { id: a, url: "http://h:1" } ] } }\n`, {}))).toEqual([
      'models["has space"]: model name must be 1-128 characters of letters, digits and . _ : / @ -, starting with a letter or digit',
    ]);
  });

  it("refuses a graph step on a pool whose every replica speaks Anthropic, which could never take it", () => {
    const pools = `pools:\n  an: { replicas: [ { id: c, url: "http://h:1", dialect: anthropic } ] }\n  mixed: { replicas: [ { id: c, url: "http://h:1", dialect: anthropic }, { id: o, url: "http://h:2" } ] }\n`;
    const graph = (step: string) => `${pools}services:\n  viaService: { pool: an }\ngraphs:\n  g:\n    nodes:\n      root:\n        routerType: Sequence\n        steps: [ ${step} ]\n`;
    expect(errorsOf(loadConfig(graph("{ pool: an, path: /v1/chat/completions }"), {}))).toEqual([
      'graphs.g.nodes.root.steps[0].pool: pool "an" has only Anthropic-native replicas, which take no graph step (a step\'s body is sent as it is, not translated to Messages)',
      'services.viaService.pool: pool "an" has only Anthropic-native replicas, which take no graph step (a step\'s body is sent as it is, not translated to Messages)',
    ]);
    expect(loadConfig(graph("{ pool: mixed, path: /v1/chat/completions }").replace("viaService: { pool: an }", "viaService: { pool: mixed }"), {}).ok).toBe(true); // its chat replica takes the steps
  });

  it("still shows values that are not secrets: defaults and literals", () => {
    const doc = `models: { m: { pool: "\${POOL:-nowhere}" }, n: { pool: elsewhere } }\npools: { p: { replicas: [ { id: r, url: "http://h:1" } ] } }\n`;
    expect(errorsOf(loadConfig(doc, {}))).toEqual(['models.m.pool: unknown pool "nowhere"', 'models.n.pool: unknown pool "elsewhere"']);
  });

  it("never echoes a string given for a field of another type, a literal key, URL credentials or the admin token", () => {
    const doc = `
models: { m: { pool: p } }
pools: { p: { replicas: [ { id: r, url: "http://user:${USERINFO_PW}@h:1?x=1", weight: "${USERINFO_PW}" } ] } }
auth: { client_keys: "${SECRET}" }
`;
    const errors = errorsOf(loadConfig(doc, {}));
    expect(errors.join("\n")).not.toContain(SECRET);
    expect(errors.join("\n")).not.toContain(USERINFO_PW);
    expect(errors).toContain("auth.client_keys: must be an array, got a string");
    expect(errors).toContain("pools.p.replicas[0].weight: must be a number, got a string");
    // Userinfo, literal api keys and the admin token are scrubbed from any message that would quote them.
    const quoting = `models: { m: { pool: "${USERINFO_PW}" }, n: { pool: "${ADMIN}" }, o: { pool: "sk-literal-api-key" } }
pools: { p: { replicas: [ { id: r, url: "http://user:${USERINFO_PW}@h:1", api_key: sk-literal-api-key } ] } }
`;
    expect(errorsOf(loadConfig(quoting, { ADMIN_TOKEN: ADMIN }))).toEqual([
      'models.m.pool: unknown pool "(redacted)"',
      'models.n.pool: unknown pool "(redacted)"',
      'models.o.pool: unknown pool "(redacted)"',
    ]);
  });

  it("scrubs a RouteWise usage API's literal key from any message that would quote it", () => {
    const doc = `models:
  m: { pool: usage-literal-key }
  rw:
    router: routewise
    routes:
      - { id: q, url: "http://h:1", provider_type: quota, quota: { limit: 10 }, quota_source: { url: "http://h:1/usage", auth: usage-literal-key, used_path: data.used, window_s: 60 } }
`;
    expect(errorsOf(loadConfig(doc, {}))).toEqual(['models.m.pool: unknown pool "(redacted)"']);
  });

  it("keeps secrets out of warnings too (the CLI's deferred variables)", () => {
    const doc = `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: "http://h:1", api_key: "\${MISSING}" } ] } }\n`;
    const result = loadConfig(doc, { OTHER: SECRET }, { unresolvedVars: "defer" });
    expect(JSON.stringify(result.ok && result.warnings)).not.toContain(SECRET);
  });
});
