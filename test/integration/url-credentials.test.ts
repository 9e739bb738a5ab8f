/**
 * A replica URL's userinfo (`http://user:password@host`) reaches the replica as Basic auth:
 * the Workers runtime's fetch drops userinfo silently, so without this a server behind
 * Basic auth would be called unauthenticated, by model calls and health checks alike.
 */
import { describe, expect, it } from "vitest";
import { serversClosedAfterEach } from "../support/fleet";
import { chat, publish } from "../support/router";
import { poolStub, runPoolAlarm } from "../support/state";
import { urlCredentials } from "../../src/lib/url-credentials";

const servers = serversClosedAfterEach();
const withUserinfo = (url: string, userinfo: string) => url.replace("http://", `http://${userinfo}@`);
const basic = (pair: string) => `Basic ${btoa(pair)}`;

describe("credentials written in a replica's URL", () => {
  it("go as Basic auth on model calls and health checks, percent-escapes decoded; an api_key wins", async () => {
    const [plain, keyed] = await servers([{}, {}], "userinfo-");
    const pool = `userinfo-${crypto.randomUUID().slice(0, 8)}`;
    await publish(`models:
  m: { pool: ${pool} }
  m2: { pool: ${pool}-keyed }
pools:
  ${pool}:
    health_check: 30
    replicas: [{ id: plain, url: "${withUserinfo(plain!.url, "ops:p%40ss")}" }]
  ${pool}-keyed:
    replicas: [{ id: keyed, url: "${withUserinfo(keyed!.url, "ops:pw")}", api_key: sk-operator }]
`);
    expect((await chat("m")).status).toBe(200);
    const call = (await plain!.stats()).recent.at(-1)!;
    expect(call.path).toBe("/v1/chat/completions");
    expect(call.headers.authorization).toBe(basic("ops:p@ss"));

    expect(await runPoolAlarm(poolStub(pool))).toBe(true);
    const probe = (await plain!.stats()).recent.at(-1)!;
    expect(probe.path).toBe("/health");
    expect(probe.headers.authorization).toBe(basic("ops:p@ss"));

    expect((await chat("m2")).status).toBe(200);
    expect((await keyed!.stats()).recent.at(-1)!.headers.authorization).toBe("Bearer sk-operator");
  });

  it("are found only in the authority: an @ in the path is no userinfo", () => {
    expect(urlCredentials("http://10.0.0.5:8000/v1")).toBeNull();
    expect(urlCredentials("https://gw.example.com/team@eu/v1")).toBeNull();
    expect(urlCredentials("https://u:p@gw.example.com/team@eu/v1")).toEqual({ url: "https://gw.example.com/team@eu/v1", authorization: basic("u:p") });
    expect(urlCredentials("https://only-user@gw.example.com")).toEqual({ url: "https://gw.example.com/", authorization: basic("only-user:") });
    expect(urlCredentials("https://u:100%@gw.example.com")?.authorization).toBe(basic("u:100%")); // a stray % is itself
  });
});
