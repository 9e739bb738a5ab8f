/** Starts and stops the fake upstream's child process (bench/upstream-child.ts). */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), "upstream-child.ts");
const READY_TIMEOUT_MS = 20_000; // tsx compiling the child on a busy 2-core machine
const STOP_TIMEOUT_MS = 10_000;

export interface UpstreamProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

export async function startUpstreamProcess(): Promise<UpstreamProcess> {
  // tsx's loader, resolved from this package, so the child runs TypeScript as we do.
  const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), CHILD], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.stdin?.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  try {
    const port = await readPort(child);
    return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop };
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
}

function readPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => fail(new Error("fake upstream did not start in time")), READY_TIMEOUT_MS);
    const fail = (err: Error) => {
      clearTimeout(timer);
      lines.close();
      reject(err);
    };
    child.once("exit", (code) => fail(new Error(`fake upstream exited early (code ${code})`)));
    lines.on("line", (line) => {
      try {
        const { port } = JSON.parse(line) as { port: number };
        clearTimeout(timer);
        resolve(port);
      } catch {
        process.stderr.write(`upstream: ${line}\n`);
      }
    });
  });
}
