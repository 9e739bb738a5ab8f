/** Runs one of the project's TypeScript scripts (a bench) as `npm run` would, through tsx, from the repository root. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const TSX = fileURLToPath(new URL("../../node_modules/.bin/tsx", import.meta.url));

export interface ScriptRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `script` (a path from the root) with `args`; killed after `timeoutMs`, which then shows as a null code. */
export function runScript(script: string, args: readonly string[], timeoutMs: number): Promise<ScriptRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, [script, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
