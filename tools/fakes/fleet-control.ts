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
 *   ...    /vllm-servers[/:id/...]  fake vLLM replicas: see tools/fakes/fleet-vllm.ts
 *   ...    /providers[/:id/...]     fake metered providers: see tools/fakes/fleet-provider.ts
 *   ...    /collectors[/:id/...]    fake OTLP collectors: see tools/fakes/fleet-otlp.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startFakeOpenAI, type FakeBehaviour } from "./fake-openai";
import { asObject, HttpError } from "./fleet-http";
import { readBody } from "./loopback";
import { vllmFleet } from "./fleet-vllm";
import { providerFleet } from "./fleet-provider";
import { serverFleet } from "./fleet-servers";
import { collectorFleet } from "./fleet-otlp";

export interface FleetControl {
  url: string;
  /** Closes the control API and every server it spawned. */
  close(): Promise<void>;
}

export async function startFleetControl(): Promise<FleetControl> {
  const servers = serverFleet({
    path: "/servers",
    noun: "server",
    idPrefix: "fake",
    start: (id, request) => startFakeOpenAI({ id, behaviour: asObject(request.behaviour) as FakeBehaviour }),
    actions: { "PUT /behaviour": (server, body) => server.setBehaviour(asObject(body) as FakeBehaviour) },
  });
  const vllm = vllmFleet();
  const providers = providerFleet();
  const collectors = collectorFleet();

  async function route(method: string, path: string, body: unknown): Promise<[number, unknown]> {
    for (const fleet of [servers, vllm, providers, collectors]) {
      const answer = fleet.route(method, path, body);
      if (answer) return answer;
    }
    if (method === "POST" && path === "/dead-port") return [200, { url: await deadPortUrl() }];
    throw new HttpError(404, `no route ${method} ${path}`);
  }

  const control = http.createServer((req, res) => {
    void (async () => {
      let status: number;
      let payload: unknown;
      try {
        const text = await readBody(req);
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
      await Promise.all([
        servers.close(),
        vllm.close(),
        providers.close(),
        collectors.close(),
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

