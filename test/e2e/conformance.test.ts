/**
 * Bad input on every surface, over a real socket: the rows of the conformance table
 * (test/support/conformance.ts) marked `socket` or `both`, sent as a misbehaving client
 * really sends them, raw bytes on a TCP connection to the router on workerd (the same
 * start as `switchyard serve`). A body shorter than its Content-Length followed by a
 * half-close, and broken chunked framing, are the client's fault: every surface answers
 * 400 in its own shape, never 500. A body without a length is counted as real chunked
 * transfer arrives. A refused request never reaches the model server.
 */
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRouter, type Router } from "../../tools/cli/runtime";
import { startFakeOpenAI, type FakeServer } from "../../tools/fakes/fake-openai";
import type { Answer, Row } from "../support/conformance";
import { ADMIN_TOKEN, CLIENT_KEY, CONFORMANCE, conformanceConfig, expectConformant, rowName } from "../support/conformance";

const RESPONSE_TIMEOUT_MS = 10_000;

let tmp: string;
let upstream: FakeServer;
let router: Router;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "switchyard-conformance-"));
  upstream = await startFakeOpenAI({ id: "up", behaviour: { reply: { body: { predictions: [1] } } } });
  router = await startRouter({ port: 0, persistTo: tmp, configText: conformanceConfig(upstream.url), vars: { ADMIN_TOKEN, TEST_CLIENT_KEY: CLIENT_KEY } });
}, 90_000);
afterAll(async () => {
  await router?.dispose();
  await upstream?.close();
  await rm(tmp, { recursive: true, force: true });
});

/** The request's head; `framing` is the body's Content-Length or Transfer-Encoding line. */
function head(row: Row, framing: string): string {
  const lines = [`${row.method} ${row.path} HTTP/1.1`, "Host: router", ...Object.entries(row.headers).map(([k, v]) => `${k}: ${v}`), framing, "Connection: close"];
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/**
 * Sends the row's bytes on a fresh connection and reads the answer. The connection is then
 * half-closed (nothing more is coming), except where the row holds it open.
 */
function exchange(row: Row): Promise<Answer> {
  const { port } = new URL(router.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${RESPONSE_TIMEOUT_MS} ms; got: ${received.toString()}`));
    }, RESPONSE_TIMEOUT_MS);
    socket.on("data", (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
    socket.on("error", () => {}); // a reset after the answer is fine; the answer is what counts
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(parse(received.toString("latin1")));
    });
    void write(row, socket).catch(() => {});
  });
}

async function write(row: Row, socket: net.Socket): Promise<void> {
  const send = (data: string | Uint8Array) => new Promise<void>((done, fail) => socket.write(data, (error) => (error ? fail(error) : done())));
  const b = row.body;
  if (b === undefined || b.kind === "text" || b.kind === "bytes") {
    const bytes = b === undefined ? Buffer.alloc(0) : b.kind === "text" ? Buffer.from(b.text) : Buffer.from(b.bytes);
    await send(head(row, `Content-Length: ${bytes.byteLength}`));
    await send(bytes);
  } else if (b.kind === "length_only") {
    await send(head(row, `Content-Length: ${b.contentLength}`));
    return; // no half-close: only the declared length can tell the router to answer now
  } else if (b.kind === "cut_short") {
    await send(head(row, "Content-Length: 100"));
    await send('{"model":"chat","mess');
  } else if (b.kind === "broken_chunks") {
    await send(head(row, "Transfer-Encoding: chunked"));
    await send('5\r\n{"mod\r\n');
    await send("zz\r\nnot a chunk\r\n");
  } else if (b.kind === "stream") {
    await send(head(row, "Transfer-Encoding: chunked"));
    const chunk = Buffer.concat([Buffer.from(`${b.chunkBytes.toString(16)}\r\n`), Buffer.alloc(b.chunkBytes, 0x20), Buffer.from("\r\n")]);
    for (let sent = 0; sent < b.totalBytes; sent += b.chunkBytes) await send(chunk);
    // Held open, the body neither ends nor goes on: the answer must come from counting.
    // (Writing on after the answer would be reset, and a reset can destroy the answer unread.)
    if (!b.ends) return;
    await send("0\r\n\r\n");
  } else {
    throw new Error(`${rowName(row)}: no socket form for a ${b.kind} body`);
  }
  socket.end();
}

/** Status, headers and (de-chunked) body of a raw HTTP/1.1 response. */
function parse(raw: string): Answer {
  const split = raw.indexOf("\r\n\r\n");
  const [statusLine, ...headerLines] = raw.slice(0, split).split("\r\n");
  const headers = new Map(headerLines.map((line) => [line.slice(0, line.indexOf(":")).trim().toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
  const body = raw.slice(split + 4);
  const text = headers.get("transfer-encoding")?.toLowerCase() === "chunked" ? dechunk(body) : body;
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? "")?.[1] ?? NaN), header: (name) => headers.get(name.toLowerCase()) ?? null, text: Buffer.from(text, "latin1").toString("utf8") };
}

function dechunk(text: string): string {
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

const overSocket = CONFORMANCE.filter((row) => row.where === "socket" || row.where === "both").map((row) => [rowName(row), row] as const);

describe("over a real socket", () => {
  it("the table has socket rows for every surface that reads a body", () => {
    expect(new Set(overSocket.map(([, row]) => row.surface)).size).toBe(13); // 3 OpenAI, Responses, 2 Anthropic, 3 KServe protocol (the versioned infer too), graphs, feedback, config, calibration
  });

  it.each(overSocket)("%s", async (_name, row) => {
    expect(row.phase).toBe("configured"); // the router here serves the table's config from the start
    const before = upstream.stats().requests;
    const answer = await exchange(row);
    expectConformant(row, answer);
    if (answer.status >= 400) expect(upstream.stats().requests, "refused before any model server").toBe(before);
  });
});
