/**
 * HTTP control API for a fleet of fake model servers (Node only). Tests running inside
 * workerd cannot start Node servers themselves, so they ask this API over fetch.
 *
 *   POST   /servers                {id?, behaviour?} -> 201 {id, url, port}; 409 if id taken
 *   PUT    /servers/:id/behaviour  FakeBehaviour (replaces the current one)
 *   GET    /servers/:id/stats      -> FakeStats
 *   POST   /servers/:id/reset      clears stats
 *   DELETE /servers/:id            closes the server
 *   POST   /dead-port              -> {url} of a 127.0.0.1 port that refuses connections
 *   ...    /vllm-servers[/:id/...]  fake vLLM replicas: see src/dev/fleet-vllm.ts
 *   ...    /providers[/:id/...]     fake metered providers: see src/dev/fleet-provider.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startFakeOpenAI, type FakeBehaviour, type FakeServer } from "./fake-openai";
import { asObject, HttpError } from "./fleet-http";
import { vllmFleet } from "./fleet-vllm";
import { providerFleet } from "./fleet-provider";

export interface FleetControl {
  url: string;
  /** Closes the control API and every server it spawned. */
  close(): Promise<void>;
}

export async function startFleetControl(): Promise<FleetControl> {
  const servers = new Map<string, FakeServer>();
  const vllm = vllmFleet();
  const providers = providerFleet();
  let nextId = 1;

  async function route(method: string, path: string, body: unknown): Promise<[number, unknown]> {
    const vllmAnswer = vllm.route(method, path, body);
    if (vllmAnswer) return vllmAnswer;
    const providerAnswer = providers.route(method, path, body);
    if (providerAnswer) return providerAnswer;
    if (method === "POST" && path === "/servers") {
      const req = asObject(body);
      const id = typeof req.id === "string" && req.id ? req.id : freshId();
      if (servers.has(id)) throw new HttpError(409, `server id ${id} already in use`);
      const behaviour = req.behaviour === undefined ? {} : (asObject(req.behaviour) as FakeBehaviour);
      const server = await startFakeOpenAI({ id, behaviour });
      servers.set(id, server);
      return [201, { id, url: server.url, port: server.port }];
    }
    if (method === "POST" && path === "/dead-port") return [200, { url: await deadPortUrl() }];

    const m = /^\/servers\/([^/]+)(\/[a-z]+)?$/.exec(path);
    if (!m?.[1]) throw new HttpError(404, `no route ${method} ${path}`);
    const id = decodeURIComponent(m[1]);
    const server = servers.get(id);
    if (!server) throw new HttpError(404, `no server ${id}`);
    const action = `${method} ${m[2] ?? ""}`;
    switch (action) {
      case "PUT /behaviour":
        server.setBehaviour(asObject(body) as FakeBehaviour);
        return [200, { ok: true }];
      case "GET /stats":
        return [200, server.stats()];
      case "POST /reset":
        server.resetStats();
        return [200, { ok: true }];
      case "DELETE ":
        servers.delete(id);
        await server.close();
        return [200, { ok: true }];
    }
    throw new HttpError(404, `no route ${method} ${path}`);
  }

  function freshId(): string {
    while (servers.has(`fake-${nextId}`)) nextId++;
    return `fake-${nextId++}`;
  }

  const control = http.createServer((req, res) => {
    void (async () => {
      let status: number;
      let payload: unknown;
      try {
        const text = await readText(req);
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          throw new HttpError(400, "body is not JSON");
        }
        [status, payload] = await route(req.method ?? "GET", (req.url ?? "/").split("?")[0] ?? "/", body);
      } catch (err) {
        status = err instanceof HttpError ? err.status : 500;
        payload = { error: err instanceof Error ? err.message : String(err) };
      }
      const out = JSON.stringify(payload);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(out) });
      res.end(out);
    })();
  });

  await new Promise<void>((resolve, reject) => {
    control.once("error", reject);
    control.listen(0, "127.0.0.1", () => resolve());
  });

  return {
    url: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    async close() {
      const closing = [...servers.values()].map((s) => s.close());
      servers.clear();
      await Promise.all([
        ...closing,
        vllm.close(),
        providers.close(),
        new Promise<void>((resolve) => {
          control.close(() => resolve());
          control.closeAllConnections();
        }),
      ]);
    },
  };
}

/** The kernel could hand the port out again later, but ephemeral ports cycle slowly. */
async function deadPortUrl(): Promise<string> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", () => resolve()));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

function readText(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}
