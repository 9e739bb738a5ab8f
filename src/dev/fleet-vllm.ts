/**
 * Fleet control's fake vLLM replicas (src/dev/fake-vllm.ts), for tests inside workerd:
 *
 *   POST   /vllm-servers              {id?, options?: FakeVllmOptions} -> 201 {id, url, port};
 *                                     409 if id taken, 400 naming a bad option
 *   GET    /vllm-servers/:id/stats    -> VllmStats (counters, KV, LoRA, per-request records)
 *   PUT    /vllm-servers/:id/tuning   FakeVllmTuning: costs and health, merged into the current ones
 *   POST   /vllm-servers/:id/reset    clears records (the cache and the counters stay, as on a real replica)
 *   DELETE /vllm-servers/:id          closes the replica, cutting its requests
 */
import { startFakeVllm, type FakeVllmOptions, type FakeVllmServer, type FakeVllmTuning } from "./fake-vllm";
import { asObject, HttpError } from "./fleet-http";

export interface VllmFleet {
  /** The answer for a /vllm-servers path, or undefined if the path is not one. */
  route(method: string, path: string, body: unknown): Promise<[number, unknown]> | undefined;
  close(): Promise<void>;
}

export function vllmFleet(): VllmFleet {
  const replicas = new Map<string, FakeVllmServer>();
  let nextId = 1;

  async function create(body: unknown): Promise<[number, unknown]> {
    const req = asObject(body);
    const id = typeof req.id === "string" && req.id ? req.id : freshId();
    if (replicas.has(id)) throw new HttpError(409, `vllm server id ${id} already in use`);
    let replica: FakeVllmServer;
    try {
      replica = await startFakeVllm({ ...(asObject(req.options) as FakeVllmOptions), id, port: 0 });
    } catch (err) {
      throw new HttpError(400, (err as Error).message);
    }
    replicas.set(id, replica);
    return [201, { id, url: replica.url, port: replica.port }];
  }

  async function act(method: string, id: string, action: string, body: unknown): Promise<[number, unknown]> {
    const replica = replicas.get(id);
    if (!replica) throw new HttpError(404, `no vllm server ${id}`);
    switch (`${method} ${action}`) {
      case "GET /stats":
        return [200, replica.stats()];
      case "PUT /tuning":
        try {
          replica.tune(asObject(body) as FakeVllmTuning);
        } catch (err) {
          throw new HttpError(400, (err as Error).message);
        }
        return [200, { ok: true }];
      case "POST /reset":
        replica.resetStats();
        return [200, { ok: true }];
      case "DELETE ":
        replicas.delete(id);
        await replica.close();
        return [200, { ok: true }];
    }
    throw new HttpError(404, `no route ${method} /vllm-servers/${id}${action}`);
  }

  function freshId(): string {
    while (replicas.has(`vllm-${nextId}`)) nextId++;
    return `vllm-${nextId++}`;
  }

  return {
    route(method, path, body) {
      if (path === "/vllm-servers" && method === "POST") return create(body);
      const m = /^\/vllm-servers\/([^/]+)(\/[a-z]+)?$/.exec(path);
      if (!m?.[1]) return undefined;
      return act(method, decodeURIComponent(m[1]), m[2] ?? "", body);
    },
    async close() {
      const closing = [...replicas.values()].map((r) => r.close());
      replicas.clear();
      await Promise.all(closing);
    },
  };
}
