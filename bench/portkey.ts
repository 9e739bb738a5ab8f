/**
 * Portkey's AI gateway (npm `@portkey-ai/gateway`, its Node build) as a bench target:
 * another router in front of the same fake upstream, so "router vs portkey" compares
 * two gateways doing the same job on the same machine in the same run.
 *
 * How it reaches our upstream: `x-portkey-provider: openai` plus
 * `x-portkey-custom-host: <upstream>/v1` on every request (its documented way to target
 * any OpenAI-compatible server; 127.0.0.1 is in its default TRUSTED_CUSTOM_HOSTS).
 * Portkey keeps no routing state and reads that per-request config from headers, so
 * its row is closest to the stateless router row.
 *
 * Plain JSON only: in 1.15.2 its Node server answers every streamed chat completion
 * with 500 ("TypeError: immutable" in ResponseService.updateHeaders, Portkey issues
 * #1389 and #1550), so with --stream the row is left out rather than measured failing.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Started } from "./workers";

const LOOPBACK_ONLY = path.join(path.dirname(fileURLToPath(import.meta.url)), "loopback-only.mjs");
const READY_TIMEOUT_MS = 20_000; // Node loading ~0.5 MB of bundled gateway on a busy machine
const READY_POLL_MS = 50;
const STOP_TIMEOUT_MS = 5_000;

export const PORTKEY_MARKER_HEADER = "x-portkey-provider"; // set on every answer Portkey relays

/** Headers that make Portkey relay a request to `upstreamUrl` as an OpenAI server. */
export function portkeyHeaders(upstreamUrl: string): Record<string, string> {
  return {
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": `${upstreamUrl}/v1`,
    authorization: "Bearer bench-unused", // passed upstream as the provider key; the fake ignores it
  };
}

/** The installed gateway's server script and version, or null when the devDependency is missing. */
export function findPortkey(): { script: string; version: string } | null {
  try {
    const pkgPath = createRequire(import.meta.url).resolve("@portkey-ai/gateway/package.json");
    const script = path.join(path.dirname(pkgPath), "build", "start-server.js");
    const { version } = JSON.parse(readFileSync(pkgPath, "utf8")) as { version: string };
    return existsSync(script) ? { script, version } : null;
  } catch {
    return null;
  }
}

/**
 * Starts the gateway on a free port. The port is probed free before the start, so another
 * process can take it in between (workerd's direct sockets bind port 0 at the same time);
 * a start that loses that race is retried on a fresh port.
 */
export async function startPortkey(script: string): Promise<Started & { pid: number }> {
  const { freePort } = await import("../tools/cli/ports");
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPortkeyOn(script, await freePort());
    } catch (err) {
      if (!(err instanceof PortTaken) || attempt >= PORT_ATTEMPTS) throw err;
    }
  }
}

const PORT_ATTEMPTS = 5; // a lost port race is rare; five in a row means something else is wrong

class PortTaken extends Error {}

async function startPortkeyOn(script: string, port: number): Promise<Started & { pid: number }> {
  // --headless and NODE_ENV=production: no web UI or log-streaming routes, as deployed.
  const child = spawn(process.execPath, ["--import", pathToFileURL(LOOPBACK_ONLY).href, script, `--port=${port}`, "--headless"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, NODE_ENV: "production" },
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const dispose = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) {
      if (stderr.includes("EADDRINUSE")) throw new PortTaken(`port ${port} was taken`);
      throw new Error(`portkey exited early (code ${child.exitCode}): ${stderr}`);
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(READY_TIMEOUT_MS) });
      await res.body?.cancel();
      return { url, pid: child.pid!, dispose };
    } catch (err) {
      if (Date.now() > deadline) {
        await dispose();
        throw new Error(`portkey did not answer on ${url}: ${(err as Error).message}\n${stderr}`);
      }
      await sleep(READY_POLL_MS);
    }
  }
}
