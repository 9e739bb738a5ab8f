/**
 * The bench's second baseline: a pass-through that, like any router choosing by the
 * body's `model`, must read the whole request body and parse it before it can forward
 * anything. It then sends the bytes it read to UPSTREAM_URL and returns the upstream's
 * response as it is. The gap between this row and `pass-through` is what body-based
 * routing costs any Worker; the gap between it and `router` is Switchyard's own.
 *
 * Compiled and run exactly like bench/passthrough-worker.ts.
 */
interface Env {
  UPSTREAM_URL: string;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const bytes = new Uint8Array(await request.arrayBuffer());
    const body = JSON.parse(UTF8.decode(bytes)) as { model?: unknown };
    if (typeof body.model !== "string") return new Response("model required", { status: 400 });
    const incoming = new URL(request.url);
    return fetch(new URL(incoming.pathname + incoming.search, env.UPSTREAM_URL), { method: "POST", headers: request.headers, body: bytes });
  },
};
