/**
 * Bad input on every surface, inside workerd: the rows of the conformance table
 * (test/support/conformance.ts) that need no real socket. Rows run against the Worker's
 * own fetch; rows whose router differs (ADMIN_TOKEN unset, a config source that throws)
 * against a fresh isolate of the same app. A refused request must never reach a model
 * server, and a body streamed in without a length that stops past the limit without
 * ending must still be answered: the router counts it, it does not wait to hold it whole. The rows that need a socket (bodies that break off, a length declared and
 * never sent) run in test/e2e/conformance.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ConfigSource } from "../../src/platform/config-source";
import type { Answer, Row } from "../support/conformance";
import { MAX_JSON_DEPTH } from "../../src/lib/json";
import { ADMIN_TOKEN, CLIENT_KEY, CONFORMANCE, conformanceConfig, expectConformant, nested, rowName } from "../support/conformance";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { isolateFetch, post, publish, routerFetch } from "../support/router";
import { within } from "../support/timing";

const CLIENT = { authorization: `Bearer ${CLIENT_KEY}` };
const ANSWER_WITHIN_MS = 10_000; // a hang (a body waited for that never ends) fails here, by name

let upstream: FleetServer;
beforeAll(async () => {
  upstream = await spawnServer({ reply: { body: { predictions: [1] } } }, "conformance"); // any POST answered, whatever the dialect
});
afterAll(() => upstream.close());
afterEach(() => {
  vi.restoreAllMocks();
});

/** Model requests the upstream has seen (health checks aside). */
async function modelRequests(): Promise<number> {
  const { byPath } = await upstream.stats();
  return Object.entries(byPath).reduce((n, [path, count]) => (path === "/health" ? n : n + count), 0);
}

const BROKEN = `the config store broke while ${CLIENT_KEY} and ${ADMIN_TOKEN} were in reach`;

/** A config source whose every read fails: whatever the route, its handler throws. */
class ThrowingConfigSource extends ConfigSource {
  override fresh(): never {
    throw new Error(BROKEN);
  }
  override get(): Promise<never> {
    return Promise.reject(new Error(BROKEN));
  }
  override invalidate(): never {
    throw new Error(BROKEN);
  }
}

/** The row's body as a fetch body. */
function bodyOf(row: Row): BodyInit | undefined {
  const b = row.body;
  if (b === undefined) return undefined;
  if (b.kind === "text") return b.text;
  if (b.kind === "bytes") return new Uint8Array(b.bytes);
  if (b.kind === "table_config") return conformanceConfig(upstream.url);
  if (b.kind !== "stream") throw new Error(`${rowName(row)}: a ${b.kind} body needs a socket`);
  let sent = 0;
  const chunk = new Uint8Array(b.chunkBytes).fill(0x20);
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent < b.totalBytes) {
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      } else if (b.ends) controller.close();
      else return new Promise<void>(() => {}); // neither more nor the end
    },
  });
}

async function send(row: Row): Promise<Answer> {
  const init: RequestInit = { method: row.method, headers: row.headers, body: bodyOf(row) };
  const res = await within(
    row.env === undefined
      ? routerFetch(row.path, init)
      : row.env === "no_admin_token"
        ? isolateFetch(row.path, init, { ADMIN_TOKEN: undefined })
        : isolateFetch(row.path, init, {}, { configSource: new ThrowingConfigSource() }),
    ANSWER_WITHIN_MS,
    `${rowName(row)}: the router's answer`,
  );
  const text = await within(res.text(), ANSWER_WITHIN_MS, `${rowName(row)}: the answer's body`);
  return { status: res.status, header: (name) => res.headers.get(name), text };
}

const inWorkerd = CONFORMANCE.filter((row) => (row.where ?? "workerd") !== "socket");
const named = (phase: Row["phase"]) => inWorkerd.filter((row) => row.phase === phase).map((row) => [rowName(row), row] as const);

describe("before any config is published", () => {
  it.each(named("no_config"))("%s", async (_name, row) => {
    expectConformant(row, await send(row));
  });
});

describe("with the table's config", () => {
  beforeAll(async () => {
    await publish(conformanceConfig(upstream.url));
  });

  it.each(named("configured"))("%s", async (_name, row) => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const before = await modelRequests();
    expectConformant(row, await send(row));
    if (row.expect.status >= 400) expect(await modelRequests(), "refused before any model server").toBe(before);
    if (row.env === "config_source_throws") {
      const lines = logged.mock.calls.map((args) => args.join(" "));
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ event: "unhandled_error", route: row.surface, message: expect.stringContaining("the config store broke while (redacted) and (redacted)") });
    }
  });

  // Beside the table: what passes where a row is refused.
  // The body's own object is one level, so MAX_JSON_DEPTH - 1 arrays inside it reach the limit exactly.
  it("a body nested exactly MAX_JSON_DEPTH deep is routed (and renamed for the upstream) as usual", async () => {
    const res = await post("/v1/chat/completions", nested(MAX_JSON_DEPTH - 1), CLIENT);
    expect(res.status).toBe(200);
    expect(JSON.parse((await upstream.stats()).recent.at(-1)!.body).model).toBe("served-chat");
  });

  it("a graph, given JSON nested 6,000 deep, passes it to its step untouched: no depth limit there, and never a 500", async () => {
    const res = await post("/graphs/guarded", `{"instances":${"[".repeat(6_000)}${"]".repeat(6_000)}}`, CLIENT);
    expect(res.status).toBe(200);
    expect((await upstream.stats()).recent.at(-1)!.body).toBe(`{"instances":${"[".repeat(6_000)}${"]".repeat(6_000)}}`);
  });

  it("with the credential each route asks for, it answers", async () => {
    expect((await post("/graphs/guarded", {}, CLIENT)).status).toBe(200);
    const feedback = await post("/feedback", { response: { meta: { routing: { root: 0 } } }, reward: 1 }, CLIENT);
    expect(feedback.status).toBe(200);
    expect(((await feedback.json()) as { meta: { credited: unknown[] } }).meta.credited).toEqual([]); // no learning router named: nothing credited
    expect((await routerFetch("/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
    expect((await routerFetch("/v1/models", { headers: CLIENT })).status).toBe(200);
  });

  it("feedback naming a router arm that is not an integer is Seldon's 400", async () => {
    const res = await post("/feedback", { response: { meta: { routing: { root: "one" } } }, reward: 1 }, CLIENT);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { status: unknown }).status).toMatchObject({ code: 400, status: "FAILURE", info: "response.meta.routing.root must be an integer" });
  });
});
