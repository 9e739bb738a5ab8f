/**
 * The bench's floor for the router: a bare body-routing Worker, the least any Worker that
 * routes by the body's `model` must do. It reads the whole request body, parses it as
 * JSON, checks the model, picks one of two upstreams 60/40 with crypto.getRandomValues
 * (the seed-004 split the router rows are configured with) and forwards the text it read,
 * returning the upstream's response as it is. The gap between this row and `router` is
 * Switchyard's own cost; the aims are stated against it.
 *
 * Compiled and run exactly like bench/passthrough-worker.ts.
 */
interface Env {
  /** Both reach the same fake upstream (as root and as a /v1 base), like the router's two replicas. */
  UPSTREAM_LOCAL: string;
  UPSTREAM_REMOTE: string;
  MODEL: string;
}

const LOCAL_SHARE = 0.6; // seed 004's local_fraction
const pick = new Uint32Array(1);

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const text = await request.text();
    let body: { model?: unknown };
    try {
      body = JSON.parse(text) as { model?: unknown };
    } catch {
      return new Response("invalid JSON", { status: 400 });
    }
    if (body.model !== env.MODEL) return new Response("unknown model", { status: 404 });
    crypto.getRandomValues(pick);
    const base = pick[0]! / 2 ** 32 < LOCAL_SHARE ? env.UPSTREAM_LOCAL : env.UPSTREAM_REMOTE;
    return fetch(base + "/chat/completions", { method: "POST", headers: request.headers, body: text });
  },
};
