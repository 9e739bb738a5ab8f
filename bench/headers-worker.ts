/**
 * `npm run bench:headers`' Worker: what the runtime charges for the parts of a limited
 * answer that any limiter answering like OpenAI must add, with no router around them. It
 * reads and parses the body as the body-routing Worker does, forwards it to the upstream
 * and answers with the upstream's headers, and, by its VARIANT binding:
 *
 * - `plain`: the upstream's body handed over as it streams (the floor);
 * - `ratelimit`: plus OpenAI's six `x-ratelimit-*` headers, which docs/limits.md promises
 *   on every answer to a limited key;
 * - `one-header`: plus one header carrying the same bytes as those six (is it their
 *   number or their size?);
 * - `read`: the answer read whole and answered from its bytes, as the router reads a
 *   limited answer for its usage;
 * - `read+ratelimit`: both, which is what a limited answer costs before any accounting.
 *
 * Compiled and run like bench/passthrough-worker.ts.
 */
interface Env {
  UPSTREAM_URL: string;
  VARIANT: string;
}

/** The six headers with values as long as the limits row's (docs/limits.md, "Answers"). */
const RATE_LIMIT_HEADERS: [string, string][] = [
  ["x-ratelimit-limit-requests", "100000000"],
  ["x-ratelimit-remaining-requests", "99999123"],
  ["x-ratelimit-reset-requests", "12s"],
  ["x-ratelimit-limit-tokens", "100000000000"],
  ["x-ratelimit-remaining-tokens", "99999912345"],
  ["x-ratelimit-reset-tokens", "12s"],
];
const ONE_HEADER_VALUE = RATE_LIMIT_HEADERS.map(([name, value]) => `${name.slice("x-ratelimit-".length)}=${value}`).join(";");

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const text = await request.text();
    JSON.parse(text);
    const upstream = await fetch(env.UPSTREAM_URL + "/v1/chat/completions", { method: "POST", headers: request.headers, body: text });
    const headers = new Headers(upstream.headers);
    headers.set("x-bench-variant", env.VARIANT);
    if (env.VARIANT.endsWith("ratelimit")) for (const [name, value] of RATE_LIMIT_HEADERS) headers.set(name, value);
    if (env.VARIANT === "one-header") headers.set("x-ratelimit", ONE_HEADER_VALUE);
    const body = env.VARIANT.startsWith("read") ? await upstream.arrayBuffer() : upstream.body;
    return new Response(body, { status: upstream.status, headers });
  },
};
