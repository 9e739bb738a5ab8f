/**
 * `switchyard fake-vllm` as a benchmark script runs it: a real process, URLs read from
 * its stdout one per line, knobs checked through the replicas' own /metrics.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { isPortFree } from "../../tools/cli/ports";

const BIN = fileURLToPath(new URL("../../bin/switchyard.mjs", import.meta.url));
const READY_TIMEOUT_MS = 30_000; // tsx compiles the CLI on first start; slow on a busy machine
const EXIT_TIMEOUT_MS = 5_000;
const FLAGS = ["--port", "--count", "--model", "--block-size", "--num-gpu-blocks", "--max-num-seqs", "--prefill-ms-per-token", "--prefill-overhead-ms", "--decode-ms-per-token", "--decode-ms-per-extra-seq", "--max-output-tokens", "--default-output-tokens", "--stream-tokens-per-chunk", "--lora", "--max-lora", "--lora-load-ms", "--seed"];

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Starts the command and resolves with the first `count` stdout lines (the URLs). */
function startFleet(args: string[], count: number): Promise<{ child: ChildProcess; urls: string[]; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [BIN, "fake-vllm", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let out = "";
  let err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${count} URLs within ${READY_TIMEOUT_MS} ms:\n${out}\n${err}`)), READY_TIMEOUT_MS);
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const lines = out.split("\n").filter(Boolean);
      if (lines.length >= count) {
        clearTimeout(timer);
        resolve({ child, urls: lines, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`fake-vllm exited (${code}) before printing its URLs:\n${out}\n${err}`));
    });
  });
}

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "fake-vllm", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

async function stop(child: ChildProcess, exited: Promise<number | null>): Promise<number | null> {
  child.kill("SIGTERM");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no exit within ${EXIT_TIMEOUT_MS} ms of SIGTERM`)), EXIT_TIMEOUT_MS)));
  try {
    return await Promise.race([exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Two consecutive free ports (a hint: another process may take them first, as with any free port). */
async function freePortPair(): Promise<number> {
  for (let p = 20_000 + Math.floor(Math.random() * 20_000); ; p += 2) {
    if ((await isPortFree(p)) && (await isPortFree(p + 1))) return p;
  }
}

describe("switchyard fake-vllm", () => {
  it("starts N replicas on free ports, prints one URL per line, applies the knobs and stops on SIGTERM", async () => {
    const { child, urls, exited } = await startFleet(["--count", "3", "--model", "tiny", "--block-size", "8", "--num-gpu-blocks", "100", "--lora", "x,y", "--max-lora", "2", "--decode-ms-per-token", "0"], 3);
    expect(urls).toHaveLength(3);
    for (const url of urls) expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(new Set(urls).size).toBe(3);

    for (const url of urls) {
      expect((await fetch(`${url}/health`)).status).toBe(200);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain('vllm:cache_config_info{block_size="8",');
      expect(metrics).toContain('num_gpu_blocks="100"');
      expect(metrics).toContain('vllm:num_requests_running{model_name="tiny",engine="0"} 0.0');
    }
    const res = await fetch(`${urls[1]}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "y", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe("y");
    expect(await (await fetch(`${urls[1]}/metrics`)).text()).toContain('vllm:lora_requests_info{max_lora="2",');

    expect(await stop(child, exited)).toBe(0);
  });

  it("puts replicas on consecutive ports from --port", async () => {
    const port = await freePortPair();
    const { child, urls, exited } = await startFleet(["--port", String(port), "--count", "2"], 2);
    expect(urls).toEqual([`http://127.0.0.1:${port}`, `http://127.0.0.1:${port + 1}`]);
    expect(await stop(child, exited)).toBe(0);
  });

  it("documents every knob in --help and refuses bad values with exit 2", async () => {
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    for (const flag of FLAGS) expect(help.stdout).toContain(`  ${flag} `);

    const bad = await run(["--max-num-seqs", "0"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("maxNumSeqs must be an integer >= 1");
    expect((await run(["--decode-ms-per-token", "fast"])).code).toBe(2);
    expect((await run(["--count", "0"])).code).toBe(2);
  });
});
