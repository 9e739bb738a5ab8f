/**
 * Fleet control's fake metered providers (src/dev/fake-provider.ts), for tests inside workerd:
 *
 *   POST   /providers                {id?, behaviour?: FakeProviderBehaviour} -> 201 {id, url, port};
 *                                    409 if id taken, 400 naming a bad field
 *   PUT    /providers/:id/behaviour  FakeProviderBehaviour (replaces the current one; restarts the PRNG)
 *   PUT    /providers/:id/used       {used: n}: tokens used in the current quota window
 *   GET    /providers/:id/stats      -> FakeProviderStats
 *   POST   /providers/:id/reset      clears stats (quota use and the prompt cache stay)
 *   DELETE /providers/:id            closes the provider, cutting its requests
 */
import { startFakeProvider, type FakeProvider, type FakeProviderBehaviour } from "./fake-provider";
import { asObject, HttpError } from "./fleet-http";

export interface ProviderFleet {
  /** The answer for a /providers path, or undefined if the path is not one. */
  route(method: string, path: string, body: unknown): Promise<[number, unknown]> | undefined;
  close(): Promise<void>;
}

export function providerFleet(): ProviderFleet {
  const providers = new Map<string, FakeProvider>();
  let nextId = 1;

  async function create(body: unknown): Promise<[number, unknown]> {
    const req = asObject(body);
    const id = typeof req.id === "string" && req.id ? req.id : freshId();
    if (providers.has(id)) throw new HttpError(409, `provider id ${id} already in use`);
    let provider: FakeProvider;
    try {
      provider = await startFakeProvider({ id, behaviour: asObject(req.behaviour) as FakeProviderBehaviour });
    } catch (err) {
      throw new HttpError(400, (err as Error).message);
    }
    providers.set(id, provider);
    return [201, { id, url: provider.url, port: provider.port }];
  }

  async function act(method: string, id: string, action: string, body: unknown): Promise<[number, unknown]> {
    const provider = providers.get(id);
    if (!provider) throw new HttpError(404, `no provider ${id}`);
    switch (`${method} ${action}`) {
      case "GET /stats":
        return [200, provider.stats()];
      case "PUT /behaviour":
        try {
          provider.setBehaviour(asObject(body) as FakeProviderBehaviour);
        } catch (err) {
          throw new HttpError(400, (err as Error).message);
        }
        return [200, { ok: true }];
      case "PUT /used": {
        const used = asObject(body).used;
        try {
          provider.setUsed(used as number);
        } catch (err) {
          throw new HttpError(400, (err as Error).message);
        }
        return [200, { ok: true }];
      }
      case "POST /reset":
        provider.resetStats();
        return [200, { ok: true }];
      case "DELETE ":
        providers.delete(id);
        await provider.close();
        return [200, { ok: true }];
    }
    throw new HttpError(404, `no route ${method} /providers/${id}${action}`);
  }

  function freshId(): string {
    while (providers.has(`provider-${nextId}`)) nextId++;
    return `provider-${nextId++}`;
  }

  return {
    route(method, path, body) {
      if (path === "/providers" && method === "POST") return create(body);
      const m = /^\/providers\/([^/]+)(\/[a-z]+)?$/.exec(path);
      if (!m?.[1]) return undefined;
      return act(method, decodeURIComponent(m[1]), m[2] ?? "", body);
    },
    async close() {
      const closing = [...providers.values()].map((p) => p.close());
      providers.clear();
      await Promise.all(closing);
    },
  };
}
