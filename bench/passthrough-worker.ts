/**
 * The bench's baseline Worker: the least a Worker in front of the upstream can do.
 * Every request goes to UPSTREAM_URL with the same path, query, method, headers and
 * body, and the upstream's response is returned as it is (streamed, not buffered).
 * What the router costs on top of this row is Switchyard's own work.
 *
 * bench/run.ts compiles this file with esbuild and runs it on workerd via Miniflare
 * with the router's compatibility date and flags. Typed with plain DOM types so it
 * type-checks with the Node-side bench (tsconfig.node.json).
 */
interface Env {
  UPSTREAM_URL: string;
}

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    const incoming = new URL(request.url);
    return fetch(new Request(new URL(incoming.pathname + incoming.search, env.UPSTREAM_URL), request));
  },
};
