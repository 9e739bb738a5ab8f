/**
 * Further router isolates for tests in workerd: the same app with its own IsolateState
 * (module-scope state), optionally its own env, which a test can read and dispose of.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { afterEach } from "vitest";
import { IsolateState } from "../../src/app/state/isolate-state";
import { cryptoRandom } from "../../src/lib/random";
import { ConfigSource } from "../../src/platform/config-source";
import { createApp } from "../../src/platform/surfaces/app";
import { within } from "./timing";

export type Send = (path: string, init?: RequestInit) => Promise<Response>;

/**
 * Registers an afterEach that runs `beforeCleanup` (a test file's own reset, e.g. its
 * frozen clock restored), then lets the isolates' ctx.waitUntil work (reports, refreshes)
 * finish, as the runtime would, bounded so a stuck one names itself, and disposes them.
 * Returns the function that starts one.
 */
export function furtherIsolates(beforeCleanup: () => void = () => {}): (extraEnv?: Record<string, string>) => { state: IsolateState; send: Send } {
  const states: IsolateState[] = [];
  const contexts: ExecutionContext[] = [];
  afterEach(async () => {
    beforeCleanup();
    await within(Promise.all(contexts.splice(0).map((ctx) => waitOnExecutionContext(ctx))), 15_000, "the extra isolates' waitUntil work");
    for (const state of states.splice(0)) state.dispose();
  }, 20_000);
  return (extraEnv = {}) => {
    const state = new IsolateState();
    states.push(state);
    const app = createApp({ configSource: new ConfigSource(), random: cryptoRandom(), state });
    const send: Send = (path, init) => {
      const ctx = createExecutionContext();
      contexts.push(ctx);
      return app.fetch(new Request(`https://router.test${path}`, init), { ...env, ...extraEnv }, ctx);
    };
    return { state, send };
  };
}
