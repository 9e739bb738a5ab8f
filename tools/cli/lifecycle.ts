import { setTimeout as sleep } from "node:timers/promises";

const READY_TIMEOUT_MS = 15_000; // workerd is listening once Miniflare resolves; this only covers a slow first isolate
const READY_POLL_MS = 100;

/**
 * One real HTTP round trip through the router (GET /health) before anything says
 * "ready": scripts and tests start sending traffic the moment they see that line.
 * Any HTTP status counts; a router without config still accepts requests.
 */
export async function waitForHttp(url: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(READY_TIMEOUT_MS) });
      await res.body?.cancel();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`router at ${url} did not answer GET /health: ${(err as Error).message}`);
      await sleep(READY_POLL_MS);
    }
  }
}

const SHUTDOWN_SIGNALS = ["SIGINT", "SIGTERM"] as const;
const PARENT_CHECK_MS = 1_000; // how soon a server started through npm notices npm is gone

/** Why a long-running command stops: a signal, or (started through npm) its parent went away. */
export type StopReason = NodeJS.Signals | "parent gone";

/**
 * Resolves on the first SIGINT or SIGTERM so the caller can shut down cleanly; a second
 * one means the user is done waiting, so it exits at once.
 *
 * Call it after everything is started. Miniflare installs an exit hook whose signal
 * handler calls process.exit(130) on the spot, which would skip our dispose and turn a
 * requested stop into a failure exit code; those handlers are taken off while we own
 * shutdown (its "exit" handler, which kills workerd if we crash, stays).
 *
 * Started through npm (`npx switchyard serve`, `npm start`), it also resolves when the
 * parent goes away: npm runs us under a shell, and a SIGTERM to npm ends npm and that
 * shell but never reaches us, which left the server (and workerd) holding its port. A
 * command started any other way keeps running when its parent exits, as `nohup … &`
 * expects.
 */
export function untilSignal(): Promise<StopReason> {
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (received) {
        process.stderr.write(`switchyard: second ${signal}, exiting without cleanup\n`);
        process.exit(130);
      }
      received = true;
      resolve(signal);
    };
    for (const signal of SHUTDOWN_SIGNALS) {
      process.removeAllListeners(signal);
      process.on(signal, onSignal);
    }
    if (process.env.npm_command === undefined) return;
    const parent = process.ppid;
    const watch = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(watch);
      if (received) return;
      received = true;
      process.stderr.write("switchyard: npm, which started this process, has gone; stopping\n");
      resolve("parent gone");
    }, PARENT_CHECK_MS);
    watch.unref();
  });
}
