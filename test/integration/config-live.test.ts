import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { decodeBlob } from "../../src/core/config/blob";
import { clientKeyCheck } from "../../src/platform/surfaces/client-auth";
import { ConfigSource, FALLBACK_TRIES } from "../../src/platform/config-source";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, chat, isolateFetch, openAIErrorOf, poolConfig, publish, publishUnchecked, routerFetch } from "../support/router";

let one: FleetServer;
let two: FleetServer;
beforeAll(async () => {
  [one, two] = [await spawnServer({}, "one"), await spawnServer({}, "two")];
});
afterAll(async () => {
  await Promise.all([one.close(), two.close()]);
});

interface RoutingView {
  config: { version: string; source: string } | null;
  rejected: { version: string; errors: { path: string; message: string }[]; serving: string | null } | null;
  models: Record<string, { pool: string; replicas: { id: string; url: string; weight: number; share: number; eligible: boolean; labels: string[]; api_key: string | null }[] }>;
}
// /routing is admin-only (routing.public_view defaults to false).
const routing = async () => (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as RoutingView;
const servedBy = async () => (await chat("m")).headers.get("x-switchyard-replica");

describe("live config", () => {
  it("a newly published version serves the next request", async () => {
    const v1 = await publish(poolConfig([{ id: "one", url: one.url }]));
    expect(await servedBy()).toBe("one");
    const v2 = await publish(poolConfig([{ id: "two", url: two.url }]));
    expect(v2).not.toBe(v1);
    expect(await servedBy()).toBe("two");
    const view = await routing();
    expect(view.config).toMatchObject({ version: v2, source: `kv:config/versions/${v2}` });
    expect(view.rejected).toBeNull();
  });

  it("stores what the admin endpoint publishes as JSON documents, which isolates load without YAML", async () => {
    const version = await publish(poolConfig([{ id: "one", url: one.url }]));
    const stored = await env.CONFIG.get(`config/versions/${version}`);
    expect(decodeBlob(stored!)).toHaveLength(1);
    expect(JSON.parse(stored!)).toMatchObject({ models: { m: { pool: "p" } }, pools: { p: { replicas: [{ id: "one", url: one.url }] } } });
  });

  it("refuses an invalid config at the admin endpoint with every failing path, and keeps serving", async () => {
    const good = await publish(poolConfig([{ id: "one", url: one.url }]));
    const res = await routerFetch("/admin/config", {
      method: "PUT",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: poolConfig([{ id: "one", url: one.url, weight: -2 }, { id: "bad", url: "not a url" }]),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string }; issues: { path: string; message: string }[] };
    expect(body.error.code).toBe("invalid_config");
    expect(body.issues).toEqual([
      { path: "pools.p.replicas[0].weight", message: "must be >= 0" },
      { path: "pools.p.replicas[1].url", message: "must be an absolute http(s) URL without query or fragment" },
    ]);
    expect(await servedBy()).toBe("one");
    expect((await routing()).config!.version).toBe(good);
  });

  it("refuses a number past its bound (a price of 1e308 per token) with its path and unit, and keeps serving", async () => {
    const good = await publish(poolConfig([{ id: "one", url: one.url }]));
    const huge = JSON.stringify({
      models: { m: { router: "routewise", routes: [{ id: "paid", provider_type: "on_demand", url: one.url, pricing: { input: 1e308, output: 1e-6 } }] } },
    });
    const res = await routerFetch("/admin/config", { method: "PUT", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: huge });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string }; issues: { path: string; message: string }[] };
    expect(body.error.code).toBe("invalid_config");
    expect(body.issues).toEqual([{ path: "models.m.routes[0].pricing.input", message: "must be <= 100 (currency per token, 100000000 per million tokens)" }]);
    expect(await servedBy()).toBe("one");
    expect((await routing()).config!.version).toBe(good);
  });

  it("keeps the last good version when KV holds an invalid one, and /routing says so", async () => {
    const good = await publish(poolConfig([{ id: "one", url: one.url }]));
    expect(await servedBy()).toBe("one");
    const bad = await publishUnchecked("models: { m: { pool: missing } }\npools: {}\n");
    expect(await servedBy()).toBe("one");
    const view = await routing();
    expect(view.config!.version).toBe(good);
    expect(view.rejected).toEqual({
      version: bad,
      at: expect.any(String),
      serving: good,
      errors: [{ path: "models.m.pool", message: 'unknown pool "missing"' }],
    });
    // A later good version clears the rejection.
    await publish(poolConfig([{ id: "two", url: two.url }]));
    expect((await routing()).rejected).toBeNull();
  });

  it("refuses a YAML alias bomb: 400 at the admin endpoint, and rejected from KV while the last good version serves", async () => {
    const levels = "abcdefgh".split("");
    const bomb = [
      poolConfig([{ id: "two", url: two.url }]),
      `x-a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]`,
      ...levels.slice(1).map((level, i) => `x-${level}: &${level} [${Array(9).fill(`*${levels[i]}`).join(",")}]`),
    ].join("\n");
    const good = await publish(poolConfig([{ id: "one", url: one.url }]));
    expect(await servedBy()).toBe("one");
    const res = await routerFetch("/admin/config", { method: "PUT", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: bomb });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string }; issues: { path: string; message: string }[] };
    expect(body.error.code).toBe("invalid_config");
    expect(body.issues).toEqual([{ path: "(document)", message: expect.stringMatching(/^expands more than 100 aliases: .*alias bomb/) }]);

    const bad = await publishUnchecked(bomb);
    expect(await servedBy()).toBe("one");
    const view = await routing();
    expect(view.config!.version).toBe(good);
    expect(view.rejected).toMatchObject({ version: bad, serving: good, errors: [{ path: "(document)", message: expect.stringMatching(/alias bomb/) }] });
  });

  it("treats a pointer to a missing blob as a rejected version", async () => {
    const good = await publish(poolConfig([{ id: "one", url: one.url }]));
    expect(await servedBy()).toBe("one");
    await env.CONFIG.put("config/current", "20990101T000000000Z-000000000000");
    expect(await servedBy()).toBe("one");
    const view = await routing();
    expect(view.config!.version).toBe(good);
    expect(view.rejected!.errors[0]!.message).toContain("does not exist");
  });
});

describe("a fresh isolate whose pointer names a version it rejects", () => {
  // An isolate's last good version lives in its memory; a new one (a deploy, an eviction,
  // a new location) has none. It finds the last good version among those published before.
  const tick = () => new Promise((resolve) => setTimeout(resolve, 5)); // version ids are ordered by the millisecond
  it("serves the newest older version that loads, past a run of bad ones, and shows the rejection", async () => {
    const good = await publish(poolConfig([{ id: "one", url: one.url }]));
    await tick();
    await publishUnchecked("models: { m: { pool: elsewhere } }\npools: {}\n");
    await tick();
    const bad = await publishUnchecked("models: { m: { pool: missing } }\npools: {}\n");
    const fresh = await new ConfigSource().get(env);
    expect(fresh.current?.version).toBe(good);
    // Through a whole fresh isolate: it answers from the good version.
    const served = await isolateFetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }) }, {});
    expect(served.status).toBe(200);
    expect(served.headers.get("x-switchyard-replica")).toBe("one");
    expect(fresh.rejected).toMatchObject({ version: bad, errors: [{ path: "models.m.pool", message: 'unknown pool "missing"' }] });
    // A pointer to a blob that is not there falls back the same way.
    await env.CONFIG.put("config/current", "20990101T000000000Z-000000000000");
    expect((await new ConfigSource().get(env)).current?.version).toBe(good);
    // An isolate that has a good version of its own keeps it, as before.
    const later = await publish(poolConfig([{ id: "two", url: two.url }]));
    const own = new ConfigSource();
    expect((await own.get(env)).current?.version).toBe(later);
  });

  it(`tries no more than FALLBACK_TRIES (${FALLBACK_TRIES}) older versions: past a longer run of bad ones it answers 503 no_config, as before`, async () => {
    const bad = Array.from({ length: FALLBACK_TRIES + 1 }, (_, i) => `20980101T00000000${i}Z-aaaaaaaaaaaa`);
    for (const version of bad) await env.CONFIG.put(`config/versions/${version}`, "models: { m: { pool: nowhere } }\n");
    await env.CONFIG.put("config/current", bad.at(-1)!);
    const source = new ConfigSource(() => now);
    let now = Date.now();
    const state = await source.get(env);
    expect(state.rejected?.version).toBe(bad.at(-1));
    expect(state.current).toBeNull(); // good versions exist, but only further back than it looks
    now += 60_000; // past CONFIG_REFRESH_MS, whatever the test Worker sets
    const res = await isolateFetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", messages: [] }) }, {});
    expect(res.status).toBe(503);
    expect((await openAIErrorOf(res)).code).toBe("no_config");
    // It looks again at each refresh while it has nothing: a good version published below the pointer (a rollback's blob restored, say) is found.
    const good = await publish(poolConfig([{ id: "one", url: one.url }]));
    await env.CONFIG.put("config/current", bad.at(-1)!);
    await env.CONFIG.put(`config/versions/${bad.at(-2)!}`, (await env.CONFIG.get(`config/versions/${good}`))!);
    expect((await source.get(env)).current?.version).toBe(bad.at(-2));
  });
});

describe("GET /routing", () => {
  it("shows the effective share of each replica per model for a seed 004 document, and no secrets", async () => {
    await publish(`
routing_strategy: fixed
routing_parameter: { local_fraction: 0.6, timeout: 30, health_check: 0 }
local_deployment:
  - { endpoint: "${one.url}", models: [llama] }
  - { endpoint: "${two.url}", models: [llama] }
remote_deployment:
  - { endpoint: "http://user:pw@127.0.0.1:1/v1", models: [llama], api_key: "\${TEST_CLIENT_KEY}" }
`);
    const view = await routing();
    const replicas = view.models.llama!.replicas;
    expect(replicas.map((r) => [r.id, r.labels, r.share])).toEqual([
      ["local-0", ["local"], 0.3],
      ["local-1", ["local"], 0.3],
      ["remote-0", ["remote"], 0.4],
    ]);
    const text = JSON.stringify(view);
    expect(text).not.toContain("sk-from-secret");
    expect(text).not.toContain("pw@");
    expect(replicas[2]!.api_key).toBe("(set)");
  });
});

describe("GET /routing access (routing.public_view)", () => {
  const get = (token?: string) => routerFetch("/routing", token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });

  it("needs the admin token when an upstream is private (the default then), in the OpenAI error shape", async () => {
    await publish(poolConfig([{ id: "one", url: one.url }]));
    expect(await servedBy()).toBe("one");
    const none = await get();
    expect(none.status).toBe(401);
    expect(await openAIErrorOf(none)).toMatchObject({ type: "authentication_error", code: "invalid_api_key" });
    expect((await get(`${ADMIN_TOKEN}x`)).status).toBe(401);
    expect((await get("sk-from-secret")).status).toBe(401);
    const admin = await get(ADMIN_TOKEN);
    expect(admin.status).toBe(200);
    expect(((await admin.json()) as { routing: { public_view: boolean } }).routing.public_view).toBe(false);
  });

  it("is open with routing.public_view: true (its public view: test/integration/routing-views.test.ts), and needs the admin token by default even when every upstream is public", async () => {
    await publish(poolConfig([{ id: "one", url: one.url }], "routing: { public_view: true }\n"));
    expect(await servedBy()).toBe("one");
    expect((await get()).status).toBe(200);
    await publish(poolConfig([{ id: "api", url: "https://api.example.com/v1" }]));
    expect((await get()).status).toBe(401);
    const admin = await get(ADMIN_TOKEN);
    expect(admin.status).toBe(200);
    expect(((await admin.json()) as { routing: { public_view: boolean } }).routing.public_view).toBe(false);
  });

  it("does not exist (404) when it needs the admin token and ADMIN_TOKEN is unset", async () => {
    await publish(poolConfig([{ id: "one", url: one.url }], "routing: { shared_state: false }\n"));
    const res = await isolateFetch("/routing", { headers: { authorization: "Bearer anything" } }, { ADMIN_TOKEN: undefined });
    expect(res.status).toBe(404);
    expect((await openAIErrorOf(res)).code).toBe("not_found");
  });
});

describe("no secret in config errors or /routing", () => {
  const SECRET = "sk-from-secret"; // TEST_CLIENT_KEY in vitest.config.ts
  const echoing = () =>
    `models: { m: { pool: "\${TEST_CLIENT_KEY}" } }\npools: { p: { replicas: [ { id: r, url: "${one.url}", weight: 1 }, { id: s, url: "${two.url}" } ] } }\n`;

  it("PUT /admin/config's 400 shows ${VAR}, never its value", async () => {
    const res = await routerFetch("/admin/config", { method: "PUT", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: echoing() });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text).not.toContain(SECRET);
    expect(JSON.parse(text).issues).toEqual([{ path: "models.m.pool", message: 'unknown pool "${TEST_CLIENT_KEY}"' }]);
  });

  it("a version rejected from KV shows no value in /routing's rejected.errors or the config_rejected log line", async () => {
    await publish(poolConfig([{ id: "one", url: one.url }]));
    expect(await servedBy()).toBe("one");
    const warn = vi.spyOn(console, "warn");
    try {
      await publishUnchecked(echoing());
      expect(await servedBy()).toBe("one");
      const view = await routing();
      expect(view.rejected!.errors).toEqual([{ path: "models.m.pool", message: 'unknown pool "${TEST_CLIENT_KEY}"' }]);
      expect(JSON.stringify(view)).not.toContain(SECRET);
      const logged = warn.mock.calls.map((args) => args.join(" ")).filter((line) => line.includes("config_rejected"));
      expect(logged.length).toBeGreaterThan(0);
      for (const line of logged) expect(line).not.toContain(SECRET);
    } finally {
      warn.mockRestore();
    }
  });

  it("/routing shows URLs as written, ${VAR} unresolved and userinfo dropped, for replicas and graph steps", async () => {
    await publish(`
models: { m: { pool: p } }
pools:
  p:
    replicas:
      - { id: path, url: "${one.url}/\${TEST_CLIENT_KEY}/v1" }
      - { id: userinfo, url: "http://\${TEST_CLIENT_KEY}@127.0.0.1:1/v1", api_key: "\${TEST_CLIENT_KEY}" }
services: { iris: { url: "${two.url}/\${TEST_CLIENT_KEY}" } }
graphs: { g: { nodes: { root: { routerType: Sequence, steps: [ { serviceName: iris }, { serviceUrl: "${two.url}/x?key=\${TEST_CLIENT_KEY}" } ] } } } }
`);
    const view = (await routing()) as RoutingView & { graphs: Record<string, { nodes: Record<string, { steps: { target: string }[] }> }> };
    expect(JSON.stringify(view)).not.toContain(SECRET);
    expect(view.models.m!.replicas.map((r) => r.url)).toEqual([`${one.url}/\${TEST_CLIENT_KEY}/v1`, "http://127.0.0.1:1/v1"]);
    expect(view.graphs.g!.nodes.root!.steps.map((s) => s.target)).toEqual([`${two.url}/\${TEST_CLIENT_KEY}/v1/models/iris:predict`, `${two.url}/x`]);
  });
});

describe("a ${VAR} client key that is not a valid digest", () => {
  it("is refused at load with its path, never its value, so keyed requests keep working on the last good version", async () => {
    const source = new ConfigSource();
    const keyed = (key: string) => `${poolConfig([{ id: "one", url: one.url }])}auth: { client_keys: ["\${DIGEST_KEY}"] }\n`;
    const good = `sha256:${"ab".repeat(32)}`;
    const goodVersion = await publishUnchecked(keyed(good));
    expect((await source.get({ ...env, DIGEST_KEY: good })).current!.version).toBe(goodVersion);
    for (const bad of [`sha256:${"ab".repeat(31)}a`, `sha256:${"ab".repeat(31)}`, `sha256:${"zz".repeat(32)}`]) {
      const badVersion = await publishUnchecked(keyed(bad) + `# ${bad}\n`);
      const state = await source.get({ ...env, DIGEST_KEY: bad });
      expect(state.current!.version).toBe(goodVersion);
      expect(state.rejected).toMatchObject({ version: badVersion, errors: [{ path: "auth.client_keys[0]", message: expect.stringContaining("the value of ${DIGEST_KEY} starts with") }] });
      expect(JSON.stringify(state.rejected)).not.toContain(bad.slice(7));
      const request = new Request("https://r/v1/models", { headers: { authorization: "Bearer some-client-key" } });
      expect(await clientKeyCheck(request, state.current!)).toEqual({ problem: "Invalid API key", status: 401 });
    }
  });
});

describe("admin endpoint auth", () => {
  it("needs the admin token (401 without or wrong), compared as a secret", async () => {
    const body = poolConfig([{ id: "one", url: one.url }]);
    const none = await routerFetch("/admin/config", { method: "PUT", body });
    expect(none.status).toBe(401);
    expect((await openAIErrorOf(none)).type).toBe("authentication_error");
    expect((await routerFetch("/admin/config", { method: "PUT", body, headers: { authorization: `Bearer ${ADMIN_TOKEN}x` } })).status).toBe(401);
    expect((await routerFetch("/admin/config", { method: "PUT", body, headers: { authorization: "Bearer " } })).status).toBe(401);
  });

  it("does not exist while ADMIN_TOKEN is unset", async () => {
    const res = await isolateFetch("/admin/config", { method: "PUT", headers: { authorization: "Bearer anything" }, body: poolConfig([{ id: "one", url: one.url }]) }, { ADMIN_TOKEN: undefined });
    expect(res.status).toBe(404);
  });

  it("refuses an oversized config document (413)", async () => {
    const res = await routerFetch("/admin/config", {
      method: "PUT",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: `# ${"x".repeat(1024 * 1024)}\n`,
    });
    expect(res.status).toBe(413);
  });
});

describe("isolate cache staleness", () => {
  it("serves the cached version until CONFIG_REFRESH_MS has passed, then the new one", async () => {
    let now = 1_000_000;
    const source = new ConfigSource(() => now);
    const refreshEnv = { ...env, CONFIG_REFRESH_MS: "5000" };
    const v1 = await publish(poolConfig([{ id: "one", url: one.url }]));
    expect((await source.get(refreshEnv)).current!.version).toBe(v1);
    const v2 = await publishUnchecked(poolConfig([{ id: "two", url: two.url }]));
    now += 4_999;
    expect((await source.get(refreshEnv)).current!.version).toBe(v1);
    now += 1;
    expect((await source.get(refreshEnv)).current!.version).toBe(v2);
  });

  it("serves the parsed snapshot as is to every request inside the interval", async () => {
    const source = new ConfigSource();
    const quietEnv = { ...env, CONFIG_REFRESH_MS: "60000" };
    const v = await publish(poolConfig([{ id: "one", url: one.url }]));
    const first = (await source.get(quietEnv)).current;
    expect(first!.version).toBe(v);
    const states = await Promise.all(Array.from({ length: 20 }, () => source.get(quietEnv)));
    for (const state of states) expect(state.current).toBe(first);
  });

  it("lets one request refresh past the interval while concurrent ones keep the current snapshot", async () => {
    let now = 5_000_000;
    const source = new ConfigSource(() => now);
    const refreshEnv = { ...env, CONFIG_REFRESH_MS: "1000" };
    const v1 = await publish(poolConfig([{ id: "one", url: one.url }]));
    await source.get(refreshEnv);
    const v2 = await publishUnchecked(poolConfig([{ id: "two", url: two.url }]));
    now += 1000;
    const refreshing = source.get(refreshEnv); // claims the refresh
    const meanwhile = await source.get(refreshEnv); // does not wait for it
    expect(meanwhile.current!.version).toBe(v1);
    expect((await refreshing).current!.version).toBe(v2);
  });
});
