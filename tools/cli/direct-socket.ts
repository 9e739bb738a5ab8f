/**
 * Runs one Worker on workerd through Miniflare and serves it on a *direct socket*: a
 * workerd socket bound to the Worker itself, with no Miniflare entry Worker in front.
 *
 * Why: Miniflare's entry socket passes every request through its own entry Worker
 * first (one more JavaScript Worker per request in the same workerd process). Measured
 * on the 2-core dev machine, a bare pass-through Worker did ~1,000-1,350 req/s through
 * the entry socket and ~2,700 through a direct socket, and that extra hop hid most of
 * the router's own cost in `npm run bench`. `switchyard serve` and every Worker row of
 * the bench start through here, so they all stand on the same footing.
 *
 * What the Worker sees differently without the entry Worker (checked on this workerd):
 * - `request.cf` is undefined (the entry Worker attached Miniflare's placeholder object);
 * - no `CF-Connecting-IP` header unless the client sends one (the entry Worker set it
 *   to the peer address, always 127.0.0.1 here);
 * - `Accept-Encoding` arrives as the client sent it (the entry Worker rewrote it to
 *   `br, gzip`, as Cloudflare's edge does);
 * - an uncaught exception is workerd's plain 500, not Miniflare's pretty error page.
 * `request.signal` fires when the client disconnects mid-stream, or resets the connection
 * before the response headers; an orderly close (FIN) before the headers is not delivered
 * at all, through either socket, which is why `switchyard serve` puts ./hangup-relay.ts
 * in front (docs/routing.md, "Client disconnect"; test/e2e/serve.test.ts).
 *
 * Miniflare still opens its entry socket (on a free port nobody is told about); its
 * Node-side APIs such as getKVNamespace go through it.
 */
import { Miniflare, convertV4MiniflareOptions, type V4SharedOptions, type V4WorkerOptions } from "miniflare";

export interface DirectSocketOptions {
  host: "127.0.0.1";
  /** 0 lets workerd pick a free port, without the race of probing for one first. */
  port: number;
}

export interface DirectWorker {
  /** Origin of the direct socket, e.g. http://127.0.0.1:8787. */
  url: string;
  mf: Miniflare;
  dispose(): Promise<void>;
}

/** Shared options that make sense here; host, port and cf are this module's business. */
type SharedOptions = Pick<V4SharedOptions, "resourcePersistencePath">;

/**
 * `worker` is one Worker's options in Miniflare's v4 shape (the shape wrangler's
 * `unstable_getMiniflareWorkerOptions` returns), code included.
 */
export async function startOnDirectSocket(worker: V4WorkerOptions & SharedOptions, listen: DirectSocketOptions): Promise<DirectWorker> {
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      ...worker,
      host: listen.host, // the unused entry socket: loopback only, any free port
      unsafeDirectSockets: [{ host: listen.host, port: listen.port }],
      // No request.cf on a direct socket anyway; `false` also stops Miniflare from trying
      // to download its cf.json placeholder on every start (there is no network here).
      cf: false,
    }),
  );
  try {
    await mf.ready;
    const url = await mf.unsafeGetDirectURL();
    return { url: url.origin, mf, dispose: () => mf.dispose() };
  } catch (err) {
    await mf.dispose().catch(() => {});
    throw err;
  }
}
