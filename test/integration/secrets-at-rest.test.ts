/**
 * A `${VAR}` inside a replica URL or a usage API URL never reaches an object's storage:
 * the URL is stored as written (`${VAR}` unresolved), the object probes and polls with
 * the real one it holds in memory, and after a restart it waits for the next sync (a
 * request, or the cron) to bring the real one back, as it does for keys.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { quotaObjectName } from "../../src/app/state/object-names";
import { loadConfig } from "../../src/core/config/load";
import { buildSnapshot } from "../../src/core/targets/snapshot";
import { providersClosedAfterEach, serversClosedAfterEach } from "../support/fleet";
import { poolStub, runPoolAlarm } from "../support/state";

const servers = serversClosedAfterEach();
const providers = providersClosedAfterEach();

function snapshotOf(text: string, vars: Record<string, unknown>, version = "20260101T000000000Z-000000000000") {
  const result = loadConfig(text, vars);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return buildSnapshot({ version, source: "test", config: result.config, clientKeyDigests: [], redactions: result.redactions, loadedAt: Date.now() });
}

describe("a pool object's storage", () => {
  it("holds the replica URL as written, never the ${VAR}'s value; health checks use the real URL, after a restart once a sync brings it", async () => {
    const [s] = await servers([{}], "at-rest-");
    const secretHost = new URL(s!.url).host; // 127.0.0.1:<port>, as secret as the test can make a host
    const pool = `at-rest-${crypto.randomUUID().slice(0, 8)}`;
    const text = `models: { m: { pool: ${pool} } }\npools:\n  ${pool}:\n    health_check: 30\n    replicas: [ { id: r, url: "\${REPLICA_URL}/v1" } ]\n`;
    const spec = snapshotOf(text, { REPLICA_URL: s!.url }).poolSpecs.get(pool)!;
    const stub = poolStub(pool);
    await stub.adopt(spec);
    expect(await runPoolAlarm(stub)).toBe(true);
    expect((await s!.stats()).byPath["/health"]).toBe(1);

    const stored = () =>
      runInDurableObject(stub, (_instance, state) => {
        const sql = state.storage.sql;
        const tables = sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'").toArray();
        return JSON.stringify(tables.map(({ name }) => sql.exec(`SELECT * FROM "${name}"`).toArray()));
      });
    const atRest = await stored();
    expect(atRest).toContain("${REPLICA_URL}/v1");
    expect(atRest).not.toContain(secretHost);

    // Restarted: no real URL until a sync brings it, so the alarm checks nothing (and sends nothing to "${REPLICA_URL}").
    await evictDurableObject(stub);
    await s!.reset();
    expect(await runPoolAlarm(stub)).toBe(true);
    expect((await s!.stats()).byPath["/health"] ?? 0).toBe(0);
    expect((await stub.snapshot()).replicas[0]).toMatchObject({ id: "r", healthy: true }); // not checked, so not judged down either
    await stub.adopt(spec); // the cron's announce, or any isolate's sync
    expect(await runPoolAlarm(stub)).toBe(true);
    expect((await s!.stats()).byPath["/health"]).toBe(1);
    expect(await stored()).not.toContain(secretHost);
  });
});

describe("a pool object's storage, a URL with userinfo written in the config", () => {
  it("holds the URL without its userinfo; checks use the real URL, after a restart once a sync brings it", async () => {
    const [s] = await servers([{}], "userinfo-");
    const password = `pw-${crypto.randomUUID()}`;
    const pool = `userinfo-${crypto.randomUUID().slice(0, 8)}`;
    const url = s!.url.replace("http://", `http://ops:${password}@`);
    const spec = snapshotOf(`models: { m: { pool: ${pool} } }\npools:\n  ${pool}:\n    health_check: 30\n    replicas: [ { id: r, url: "${url}" } ]\n`, {}).poolSpecs.get(pool)!;
    const stub = poolStub(pool);
    await stub.adopt(spec);
    expect(await runPoolAlarm(stub)).toBe(true);
    expect((await s!.stats()).byPath["/health"]).toBe(1);
    const stored = await runInDurableObject(stub, (_instance, state) => JSON.stringify(state.storage.sql.exec("SELECT * FROM spec").toArray()));
    expect(stored).toContain(s!.url.replace("http://", ""));
    expect(stored).not.toContain(password);
    expect(stored).not.toContain("ops:");
    // Restarted: the stored URL lacks what the config wrote, so nothing is checked until a sync brings the real one.
    await evictDurableObject(stub);
    await s!.reset();
    expect(await runPoolAlarm(stub)).toBe(true);
    expect((await s!.stats()).byPath["/health"] ?? 0).toBe(0);
    await stub.adopt(spec);
    expect(await runPoolAlarm(stub)).toBe(true);
    expect((await s!.stats()).byPath["/health"]).toBe(1);
  });
});

describe("a quota object's storage", () => {
  it("holds the usage API URL as written, never the ${VAR}'s value; it polls the real URL, after a restart once a sync brings it", async () => {
    const [provider] = await providers([{ quotaLimit: 1_000 }], "qrest");
    await provider!.setUsed(100);
    const secretHost = new URL(provider!.url).host;
    const text = JSON.stringify({
      models: {
        m: {
          router: "routewise",
          routes: [{ id: "q", provider_type: "quota", url: "https://q.example.com/v1", quota: { limit: 1_000 }, quota_source: { url: "${USAGE_URL}/usage", auth: "${USAGE_KEY}", used_path: "data.used", window_s: 3_600 } }],
        },
      },
    });
    const spec = snapshotOf(text, { USAGE_URL: provider!.url, USAGE_KEY: "sk-usage-key" }).routewise.get("m")!.quotas.get("q")!;
    const quota = env.PROVIDER_QUOTA.getByName(quotaObjectName(`rest-${crypto.randomUUID()}`));
    expect(await quota.sync({ isolate: "i", spec, batches: [] })).toMatchObject({ remaining: 900, failSafe: null });
    expect((await provider!.stats()).byPath["/usage"]).toBe(1);

    const stored = () => runInDurableObject(quota, async (_instance, state) => JSON.stringify([...(await state.storage.list()).entries()]));
    const atRest = await stored();
    expect(atRest).toContain("${USAGE_URL}/usage");
    expect(atRest).not.toContain(secretHost);
    expect(atRest).not.toContain("sk-usage-key");

    await evictDurableObject(quota);
    await provider!.reset();
    expect(await runDurableObjectAlarm(quota)).toBe(true);
    expect((await provider!.stats()).byPath["/usage"] ?? 0).toBe(0);
    expect((await quota.snapshot()).lastError).toContain("waiting for");
    expect(await quota.sync({ isolate: "i", spec, batches: [] })).toMatchObject({ remaining: 900, failSafe: null, lastError: null });
    expect((await provider!.stats()).byPath["/usage"]).toBe(1);
    expect(await stored()).not.toContain(secretHost);
  });
});
