/**
 * Named keys and limit rules in config (src/core/config/limits-schema.ts): what loads,
 * and what is refused with its path.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";
import type { LoadResult } from "../../src/core/config/load";
import { bucketsFor, buildLimitTable, matchingBuckets } from "../../src/core/limits/rules";
import { keyEntries, keyPrincipals, withTenant } from "../../src/core/limits/principal";
import { costOf, pricesOf } from "../../src/core/limits/prices";

const DIGEST = `sha256:${"ab".repeat(32)}`;
const PLATFORM_DIGEST = `sha256:${"cd".repeat(32)}`;
const BASE = `
models:
  m: { pool: p, pricing: { input: 2, output: 8, cached_input: 1 } }
  free: { pool: p }
pools:
  p: { replicas: [{ id: r, url: "http://127.0.0.1:9" }] }
auth:
  client_keys: ["${DIGEST}"]
  keys:
    - { name: alice, key: "\${ALICE_KEY}", team: research, metadata: { owner: "a@x" } }
    - { name: platform, key: "${PLATFORM_DIGEST}", trusted_tenant_header: true }
`;
const VARS = { ALICE_KEY: "sk-alice", RULE_KEY: "alice" };

function errorsOf(result: LoadResult): string[] {
  if (result.ok) throw new Error("expected the config to be rejected");
  return result.errors.map((e) => `${e.path}: ${e.message}`);
}
function configOf(result: LoadResult) {
  if (!result.ok) throw new Error(`expected a valid config, got ${JSON.stringify(result.errors)}`);
  return result.config;
}
const withLimits = (limits: string) => `${BASE}limits:\n${limits}`;

describe("auth.keys", () => {
  it("loads beside client_keys; principals are named, unnamed keys by their place, never by the key", () => {
    const config = configOf(loadConfig(BASE, VARS));
    expect(keyEntries(config)).toEqual([DIGEST, "sk-alice", PLATFORM_DIGEST]);
    expect(keyPrincipals(config).map((k) => k.principal)).toEqual([{ key: "client_keys[0]" }, { key: "alice", team: "research" }, { key: "platform" }]);
  });

  it("refuses a key listed twice, by the same secret, the same value or the same digest: the first entry would take its requests and the second's limits would never apply", () => {
    const twice = (key: string) => BASE.replace(`key: "${PLATFORM_DIGEST}"`, `key: "${key}"`);
    const refused = (earlier: string) => [`auth.keys[1].key: the same key as ${earlier}: a key is listed once (one in both lists belongs in auth.keys, where it has a name), or the first entry would take all its requests and this one's limits would never apply`];
    expect(errorsOf(loadConfig(twice(DIGEST), VARS))).toEqual(refused("auth.client_keys[0]"));
    expect(errorsOf(loadConfig(twice("\${ALICE_KEY}"), VARS))).toEqual(refused("auth.keys[0].key"));
    expect(errorsOf(loadConfig(twice("\${OTHER_KEY}"), { ...VARS, OTHER_KEY: "sk-alice" }))).toEqual(refused("auth.keys[0].key"));
    // The CLI cannot see secrets: two references to one variable are one key; two variables are not.
    expect(errorsOf(loadConfig(twice("\${ALICE_KEY}"), {}, { unresolvedVars: "defer" }))).toEqual(refused("auth.keys[0].key"));
    expect(loadConfig(twice("\${OTHER_KEY}"), {}, { unresolvedVars: "defer" }).ok).toBe(true);
    expect(JSON.stringify(errorsOf(loadConfig(twice("\${OTHER_KEY}"), { ...VARS, OTHER_KEY: "sk-alice" })))).not.toContain("sk-alice");
  });

  it("refuses a raw key, a duplicate name, and a name made from a ${VAR}", () => {
    const raw = BASE.replace('"${ALICE_KEY}"', '"sk-raw"');
    expect(errorsOf(loadConfig(raw, VARS))).toContainEqual(expect.stringMatching(/^auth\.keys\[0\]\.key: must be "sha256:/));
    const dup = BASE.replace("name: platform", "name: alice");
    expect(errorsOf(loadConfig(dup, VARS))).toContain('auth.keys[1].name: duplicate key name "alice"');
    const fromVar = BASE.replace("name: alice", 'name: "${RULE_KEY}"');
    expect(errorsOf(loadConfig(fromVar, VARS))).toContainEqual(expect.stringMatching(/^auth\.keys\[0\]\.name: must not hold a \$\{VAR\} reference/));
  });

  it("honours X-Switchyard-Tenant only from a trusted key, and only a valid name", () => {
    const [, alice, platform] = keyPrincipals(configOf(loadConfig(BASE, VARS)));
    expect(withTenant(alice!, "bob")).toEqual({ key: "alice", team: "research" });
    expect(withTenant(platform!, " bob ")).toEqual({ key: "platform", tenant: "bob" });
    expect(withTenant(platform!, "a b")).toEqual({ problem: expect.stringContaining("X-Switchyard-Tenant") });
  });
});

describe("limits", () => {
  it("loads every kind of rule", () => {
    const config = configOf(
      loadConfig(
        withLimits(`  - { key: alice, requests_per_minute: 60, tokens_per_minute: 10000, concurrent_requests: 4 }
  - { team: research, model: m, spend: { amount: 10, window: day } }
  - { model: m, spend: { amount: 100, window: fixed, reset_at: "2027-01-01T00:00:00Z" } }
  - { key: platform, per_tenant: true, requests_per_minute: 5 }
  - { key: "client_keys[0]", requests_per_minute: 5 }
`),
        VARS,
      ),
    );
    expect(config.limits).toHaveLength(5);
  });

  it("refuses bad rules with their paths", () => {
    const errors = errorsOf(
      loadConfig(
        withLimits(`  - { key: alice, requests_per_minute: 1 }
  - { key: alice, requests_per_minute: 1 }
  - { key: alice, requests_per_minute: 1 }
  - { key: alice }
  - { requests_per_minute: 1 }
  - { key: alice, team: research, requests_per_minute: 1 }
  - { key: alice, spend: { amount: 1, window: day } }
  - { key: alice, spend: { amount: 1, window: fixed } }
  - { key: alice, spend: { amount: 1, window: day, reset_at: "2027-01-01" } }
  - { key: alice, spend: { amount: 1, window: fixed, reset_at: "soon" } }
  - { key: alice, spend: { amount: 0, window: week } }
  - { key: alice, requests_per_minute: 0, tokens_per_minute: 1.5 }
`),
        VARS,
      ),
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        "limits[3]: must set requests_per_minute, tokens_per_minute, concurrent_requests or spend",
        "limits[4]: must name a key, a team or a model (or a key or team with a model)",
        "limits[5].team: a rule is scoped to a key or a team, not both",
        "limits[7].spend.reset_at: is required with window: fixed",
        "limits[8].spend.reset_at: applies to window: fixed only",
        expect.stringMatching(/^limits\[9\]\.spend\.reset_at: must be an ISO 8601/),
        expect.stringMatching(/^limits\[10\]\.spend\.amount: /),
        expect.stringMatching(/^limits\[10\]\.spend\.window: /),
        expect.stringMatching(/^limits\[11\]\.requests_per_minute: /),
        expect.stringMatching(/^limits\[11\]\.tokens_per_minute: /),
      ]),
    );
  });

  it("refuses rules naming what the config does not have (checked once every rule parses)", () => {
    const errors = errorsOf(
      loadConfig(
        withLimits(`  - { key: nobody, requests_per_minute: 1 }
  - { team: nowhere, requests_per_minute: 1 }
  - { model: nothing, requests_per_minute: 1 }
  - { model: free, spend: { amount: 1, window: day } }
`),
        VARS,
      ),
    );
    expect(errors).toEqual([
      'limits[0].key: unknown key "nobody": name one of auth.keys (or client_keys[i])',
      'limits[1].team: unknown team "nowhere": no key of auth.keys is in it',
      'limits[2].model: unknown model "nothing": name a model, or a graph',
      expect.stringMatching(/^limits\[3\]\.spend: model "free" has no prices/),
    ]);
  });

  it("refuses a rule naming a key through a ${VAR}", () => {
    expect(errorsOf(loadConfig(withLimits('  - { key: "${RULE_KEY}", requests_per_minute: 1 }\n'), VARS))).toContainEqual(expect.stringMatching(/^limits\[0\]\.key: must not hold a \$\{VAR\} reference/));
  });

  it("matches the rules of a request's key, team and model; one scope's rules merge to the tightest", () => {
    const config = configOf(
      loadConfig(
        withLimits(`  - { key: alice, requests_per_minute: 60 }
  - { key: alice, requests_per_minute: 30, tokens_per_minute: 100 }
  - { team: research, model: m, tokens_per_minute: 1000 }
  - { model: free, concurrent_requests: 2 }
  - { key: platform, per_tenant: true, requests_per_minute: 5 }
`),
        VARS,
      ),
    );
    const table = buildLimitTable(config);
    const alice = { key: "alice", team: "research" };
    expect(matchingBuckets(table, alice, "m")).toEqual([
      { id: "key=alice", limits: { requests: { total: 30, window: "minute" }, tokens: { total: 100, window: "minute" } } },
      { id: "team=research,model=m", limits: { tokens: { total: 1000, window: "minute" } } },
    ]);
    expect(matchingBuckets(table, alice, "free").map((b) => b.id)).toEqual(["key=alice", "model=free"]);
    expect(matchingBuckets(table, undefined, "m")).toEqual([]);
    expect(matchingBuckets(table, { key: "platform", tenant: "bob" }, "m").map((b) => b.id)).toEqual(["key=platform,tenant=bob"]);
    expect(matchingBuckets(table, { key: "platform" }, "m").map((b) => b.id)).toEqual(["key=platform,tenant"]);
  });

  it("keeps a second spend window on one scope as its own counter, the longest window in the scope's own, whatever the rules' order", () => {
    const rules = [
      "  - { key: alice, spend: { amount: 1000, window: month } }\n",
      "  - { key: alice, spend: { amount: 10, window: hour }, requests_per_minute: 5 }\n",
      "  - { key: alice, spend: { amount: 20, window: hour } }\n",
      "  - { key: alice, spend: { amount: 50, window: fixed, reset_at: \"2027-01-01T00:00:00Z\" } }\n",
    ];
    const ids = (order: string[]) => matchingBuckets(buildLimitTable(configOf(loadConfig(withLimits(order.join("")), VARS))), { key: "alice", team: "research" }, "m");
    expect(ids(rules)).toEqual([
      { id: "key=alice", limits: { requests: { total: 5, window: "minute" }, spend: expect.objectContaining({ total: 50, window: "fixed" }) } },
      { id: "key=alice,spend=month", limits: { spend: expect.objectContaining({ total: 1000, window: "month" }) } },
      { id: "key=alice,spend=hour", limits: { spend: expect.objectContaining({ total: 10, window: "hour" }) } }, // of two hourly caps the smaller
    ]);
    expect(ids([...rules].reverse())).toEqual(ids(rules)); // a bucket's id is its window's, not its rule's place
  });

  it("counts a per-tenant rule that names no key per key and end user: two platforms' 'acme' are two end users, and a key without tenants is its own", () => {
    const config = configOf(loadConfig(withLimits("  - { model: m, per_tenant: true, requests_per_minute: 2 }\n"), VARS));
    const table = buildLimitTable(config);
    expect(matchingBuckets(table, { key: "platform", tenant: "acme" }, "m").map((b) => b.id)).toEqual(["model=m,tenant=acme,by=platform"]);
    expect(matchingBuckets(table, { key: "alice", tenant: "acme" }, "m").map((b) => b.id)).toEqual(["model=m,tenant=acme,by=alice"]);
    expect(matchingBuckets(table, { key: "alice", team: "research" }, "m").map((b) => b.id)).toEqual(["model=m,tenant,by=alice"]);
    expect(matchingBuckets(table, undefined, "m").map((b) => b.id)).toEqual(["model=m,tenant"]); // an open router: one anonymous end user
  });

  it("selects for /admin/usage the buckets that limit the filter's requests: a team's members' key rules, not other teams' keys'", () => {
    const config = configOf(
      loadConfig(
        withLimits(`  - { key: alice, requests_per_minute: 1 }
  - { key: bob, requests_per_minute: 1 }
  - { key: platform, requests_per_minute: 1 }
  - { team: research, requests_per_minute: 1 }
  - { team: money, requests_per_minute: 1 }
  - { model: m, concurrent_requests: 1 }
`).replace("  keys:\n", '  keys:\n    - { name: bob, key: "${BOB_KEY}", team: money }\n'),
        { ...VARS, BOB_KEY: "sk-bob" },
      ),
    );
    const table = buildLimitTable(config);
    const teams = new Map(keyPrincipals(config).map((k) => [k.principal.key, k.principal.team]));
    const ids = (filter: Parameters<typeof bucketsFor>[1]) => bucketsFor(table, filter, (key) => teams.get(key)).map((b) => b.id);
    expect(ids({ team: "research" })).toEqual(["key=alice", "team=research", "model=m"]);
    expect(ids({ team: "money" })).toEqual(["key=bob", "team=money", "model=m"]);
    expect(ids({ key: "alice" })).toEqual(["key=alice", "team=research", "model=m"]);
    expect(ids({ key: "platform" })).toEqual(["key=platform", "model=m"]); // a key in no team: no team's rule limits it
    expect(ids({ key: "alice", team: "money" })).toEqual([]); // alice's requests are not money's
    expect(ids({ key: "alice", team: "research", model: "m" })).toEqual(["key=alice", "team=research", "model=m"]);
    expect(ids({ model: "free" })).toEqual(["key=alice", "key=bob", "key=platform", "team=research", "team=money"]);
  });

  it("selects for the views a per-tenant rule naming no key as one bucket per key it counts, those the requests would use", () => {
    const config = configOf(loadConfig(withLimits("  - { model: m, per_tenant: true, requests_per_minute: 2 }\n"), VARS));
    const table = buildLimitTable(config);
    const teams = new Map(keyPrincipals(config).map((k) => [k.principal.key, k.principal.team]));
    const keys = keyPrincipals(config).map((k) => ({ name: k.principal.key, trusted: k.trustsTenantHeader === true }));
    const read = (filter: Parameters<typeof bucketsFor>[1]) => bucketsFor(table, filter, (key) => teams.get(key), keys).map((b) => [b.id, b.by]);
    expect(read({})).toEqual([["model=m,tenant,by=client_keys[0]", "client_keys[0]"], ["model=m,tenant,by=alice", "alice"], ["model=m,tenant,by=platform", "platform"]]);
    expect(read({ team: "research" })).toEqual([["model=m,tenant,by=alice", "alice"]]);
    expect(read({ key: "platform", tenant: "acme" })).toEqual([["model=m,tenant=acme,by=platform", "platform"]]);
    expect(read({ tenant: "acme" })).toEqual([["model=m,tenant=acme,by=platform", "platform"]]); // only a trusted key names tenants
    expect(read({ key: "alice", tenant: "acme" })).toEqual([]); // alice's header is ignored: she has no such bucket
    // The very buckets a request charges.
    expect(matchingBuckets(table, { key: "platform", tenant: "acme" }, "m").map((b) => b.id)).toEqual(["model=m,tenant=acme,by=platform"]);
    expect(matchingBuckets(table, { key: "alice", team: "research" }, "m").map((b) => b.id)).toEqual(["model=m,tenant,by=alice"]);
  });

  it("prices a pool model per million tokens, cached input at its own price", () => {
    const config = configOf(loadConfig(BASE, VARS));
    const prices = pricesOf(config, "m");
    expect(costOf(prices, 1_000_000, 0, 0)).toBeCloseTo(2);
    expect(costOf(prices, 1_000_000, 500_000, 1_000_000)).toBeCloseTo(1 + 0.5 + 8);
    expect(costOf(pricesOf(config, "free"), 1e6, 0, 1e6)).toBe(0);
  });
});
