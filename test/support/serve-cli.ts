/**
 * `switchyard serve` as a user runs it, for the e2e suites: a real process (real workerd,
 * real socket), resolved once it prints its ready line.
 */
import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

export const BIN = fileURLToPath(new URL("../../bin/switchyard.mjs", import.meta.url));
const READY_TIMEOUT_MS = 45_000; // bundling plus two workerd starts; slow CI machines take ~10 s
const EXIT_TIMEOUT_MS = 5_000; // "a clean exit within a few seconds"

export interface Served {
  child: ChildProcess;
  url: string;
  readyLine: string;
  output: () => string;
  /** Sends a signal and resolves with the exit code, or rejects after EXIT_TIMEOUT_MS. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `switchyard serve ...` in the background (cwd: `cwd`, so nothing lands in the repo), resolved once it prints its ready line. */
export function serve(args: string[], cwd: string): Promise<Served> {
  const child = spawn(process.execPath, [BIN, "serve", ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill(signal);
    const timeout = sleep(EXIT_TIMEOUT_MS).then(() => {
      child.kill("SIGKILL");
      throw new Error(`serve did not exit within ${EXIT_TIMEOUT_MS} ms of ${signal}:\n${out}`);
    });
    return Promise.race([exited, timeout]);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`serve printed no ready line within ${READY_TIMEOUT_MS} ms:\n${out}`));
    }, READY_TIMEOUT_MS);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /^.*\bready on (http:\/\/\S+).*$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, readyLine: m[0], output: () => out, stop });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code}) before it was ready:\n${out}`));
    });
  });
}

export async function freePort(): Promise<number> {
  const srv = http.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}
