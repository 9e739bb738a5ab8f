/**
 * Bodies that cannot be read, sent as a misbehaving client really sends them: over a TCP
 * socket to the router on workerd (the same start as `switchyard serve`). A body shorter
 * than its Content-Length followed by a half-close, and broken chunked framing, are the
 * client's fault: every surface answers 400 in its own shape, never 500.
 */
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRouter, type Router } from "../../tools/cli/runtime";
import { startFakeOpenAI, type FakeServer } from "../../tools/fakes/fake-openai";

const RESPONSE_TIMEOUT_MS = 10_000;

let tmp: string;
let upstream: FakeServer;
let router: Router;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "switchyard-bodies-"));
  upstream = await startFakeOpenAI({ id: "up", behaviour: { reply: { body: { predictions: [1] } } } });
  router = await startRouter({
    port: 0,
    persistTo: tmp,
    configText: `models:
  chat: { pool: p }
pools:
  p:
    replicas: [{ id: up, url: "${upstream.url}" }]
routing: { shared_state: false }
---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: g
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
      - serviceUrl: ${upstream.url}
`,
  });
}, 90_000);
afterAll(async () => {
  await router?.dispose();
  await upstream?.close();
  await rm(tmp, { recursive: true, force: true });
});

/** Writes raw bytes, half-closes, and returns the status line and body of whatever comes back. */
function rawExchange(head: string, bodyParts: string[]): Promise<{ status: number; body: string }> {
  const { port } = new URL(router.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    let received = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${RESPONSE_TIMEOUT_MS} ms; got: ${received}`));
    }, RESPONSE_TIMEOUT_MS);
    socket.on("data", (chunk) => (received += chunk.toString()));
    socket.on("error", () => {}); // a reset after the answer is fine; the answer is what counts
    socket.on("close", () => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? NaN);
      const body = received.slice(received.indexOf("\r\n\r\n") + 4);
      resolve({ status, body: dechunk(body) });
    });
    socket.write(head);
    for (const part of bodyParts) socket.write(part);
    socket.end(); // half-close: nothing more is coming
  });
}

/** The body of a chunked response, or the text as is. */
function dechunk(text: string): string {
  if (!/^[0-9a-f]+\r\n/i.test(text)) return text;
  let out = "";
  let rest = text;
  for (;;) {
    const line = /^([0-9a-f]+)\r\n/i.exec(rest);
    if (!line) return out;
    const size = parseInt(line[1]!, 16);
    if (size === 0) return out;
    out += rest.slice(line[0].length, line[0].length + size);
    rest = rest.slice(line[0].length + size + 2);
  }
}

const surfaces = [
  { path: "/v1/chat/completions", shape: (body: string) => expect(JSON.parse(body).error.code).toBe("unreadable_body") },
  { path: "/v1/models/chat:predict", shape: (body: string) => expect(JSON.parse(body).error).toContain("could not be read") },
  { path: "/graphs/g", shape: (body: string) => expect(JSON.parse(body)).toMatchObject({ error: "Failed to process request", cause: expect.stringContaining("could not be read") }) },
  { path: "/feedback", shape: (body: string) => expect(JSON.parse(body).status).toMatchObject({ code: 400, status: "FAILURE" }) },
];

describe("a body the client does not finish", () => {
  it.each(surfaces)("$path: shorter than its Content-Length, then a half-close, is 400", async ({ path, shape }) => {
    const head = `POST ${path} HTTP/1.1\r\nHost: router\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n`;
    const res = await rawExchange(head, ['{"model":"chat","mess']);
    expect(res.status, res.body).toBe(400);
    shape(res.body);
  });

  it.each(surfaces)("$path: broken chunked framing is 400", async ({ path, shape }) => {
    const head = `POST ${path} HTTP/1.1\r\nHost: router\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
    const res = await rawExchange(head, ['5\r\n{"mod\r\n', "zz\r\nnot a chunk\r\n"]);
    expect(res.status, res.body).toBe(400);
    shape(res.body);
  });
});
