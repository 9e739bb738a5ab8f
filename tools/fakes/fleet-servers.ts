/**
 * One kind of fake server fleet control spawns for tests inside workerd (fake OpenAI
 * servers, vLLM replicas, metered providers), under a path of its own:
 *
 *   POST   <path>              {id?, ...what `start` reads} -> 201 {id, url, port}; 409 if id taken
 *   GET    <path>/:id/stats    -> the server's stats
 *   POST   <path>/:id/reset    clears its stats
 *   DELETE <path>/:id          closes it, cutting its requests
 *   <kind's own actions>       e.g. PUT <path>/:id/behaviour
 *
 * A `start` or an action that throws answers 400 with its message (it names the bad field).
 */
import { asObject, HttpError } from "./fleet-http";

/** What every spawned server can do. */
export interface SpawnedServer {
  url: string;
  port: number;
  stats(): unknown;
  resetStats(): void;
  close(): Promise<void>;
}

export interface FleetKind<S extends SpawnedServer> {
  /** The path prefix, e.g. "/providers". */
  path: string;
  /** What messages call one, e.g. "provider". */
  noun: string;
  /** Generated ids are `<idPrefix>-<n>`. */
  idPrefix: string;
  /** Starts one for a create request (its id already chosen). */
  start(id: string, request: Record<string, unknown>): Promise<S>;
  /** The kind's own actions by "METHOD /action", each given the request body. */
  actions: Record<string, (server: S, body: unknown) => void>;
}

export interface ServerFleet {
  /** The answer for a path of this kind, or undefined if the path is not one. */
  route(method: string, path: string, body: unknown): Promise<[number, unknown]> | undefined;
  close(): Promise<void>;
}

/** A thrown error as the 400 it answers (an HttpError keeps its own status). */
function badRequest(err: unknown): HttpError {
  return err instanceof HttpError ? err : new HttpError(400, err instanceof Error ? err.message : String(err));
}

export function serverFleet<S extends SpawnedServer>(kind: FleetKind<S>): ServerFleet {
  const servers = new Map<string, S>();
  const pattern = new RegExp(`^${kind.path}/([^/]+)(/[a-z]+)?$`);
  let nextId = 1;

  async function create(body: unknown): Promise<[number, unknown]> {
    const request = asObject(body);
    const id = typeof request.id === "string" && request.id ? request.id : freshId();
    if (servers.has(id)) throw new HttpError(409, `${kind.noun} id ${id} already in use`);
    let server: S;
    try {
      server = await kind.start(id, request);
    } catch (err) {
      throw badRequest(err);
    }
    servers.set(id, server);
    return [201, { id, url: server.url, port: server.port }];
  }

  async function act(method: string, id: string, action: string, body: unknown): Promise<[number, unknown]> {
    const server = servers.get(id);
    if (!server) throw new HttpError(404, `no ${kind.noun} ${id}`);
    const key = `${method} ${action}`;
    switch (key) {
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
    const own = kind.actions[key];
    if (!own) throw new HttpError(404, `no route ${method} ${kind.path}/${id}${action}`);
    try {
      own(server, body);
    } catch (err) {
      throw badRequest(err);
    }
    return [200, { ok: true }];
  }

  function freshId(): string {
    while (servers.has(`${kind.idPrefix}-${nextId}`)) nextId++;
    return `${kind.idPrefix}-${nextId++}`;
  }

  return {
    route(method, path, body) {
      if (path === kind.path && method === "POST") return create(body);
      const m = pattern.exec(path);
      if (!m?.[1]) return undefined;
      return act(method, decodeURIComponent(m[1]), m[2] ?? "", body);
    },
    async close() {
      const closing = [...servers.values()].map((s) => s.close());
      servers.clear();
      await Promise.all(closing);
    },
  };
}
