/**
 * A fake OpenTelemetry collector on 127.0.0.1: OTLP/HTTP with JSON bodies, every export
 * recorded (headers, raw text, parsed body) for tests to read back. It can also hang
 * (read the export and never answer) or answer an error status, as a collector that is
 * slow or down would.
 */
import http from "node:http";
import type { CollectorExport, CollectorStats, FakeCollectorBehaviour } from "./fake-otlp-types";
import { FAKE_MAX_BODY_BYTES, listenOnLoopback, readBody } from "./loopback";

export type { CollectorExport, CollectorStats, FakeCollectorBehaviour };

const EXPORTS_KEPT = 500; // far more than a test sends; bounds the fake's memory

export interface FakeCollector {
  url: string;
  port: number;
  setBehaviour(b: FakeCollectorBehaviour): void;
  stats(): CollectorStats;
  resetStats(): void;
  close(): Promise<void>;
}

export async function startFakeCollector(options: { behaviour?: FakeCollectorBehaviour } = {}): Promise<FakeCollector> {
  let behaviour: FakeCollectorBehaviour = options.behaviour ?? {};
  let exports: CollectorExport[] = [];
  const held = new Set<http.ServerResponse>();

  const server = http.createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req, FAKE_MAX_BODY_BYTES);
      let body: unknown = null;
      try {
        body = JSON.parse(raw);
      } catch {
        body = null;
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(", ") : (value ?? "");
      exports.push({ at: Date.now(), path: req.url ?? "/", headers, raw, body });
      if (exports.length > EXPORTS_KEPT) exports = exports.slice(-EXPORTS_KEPT);
      const mode = behaviour.mode ?? "ok";
      if (mode === "hang") {
        held.add(res);
        res.on("close", () => held.delete(res));
        return;
      }
      const status = mode === "status" ? (behaviour.status ?? 503) : 200;
      const out = JSON.stringify(status === 200 ? { partialSuccess: {} } : { code: 14, message: "unavailable" });
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(out) });
      res.end(out);
    })();
  });
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    setBehaviour: (b) => void (behaviour = b),
    stats: () => ({ exports, held: held.size }),
    resetStats: () => void (exports = []),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
