/**
 * `npm run bench:headers`: what a limited answer's required parts cost the runtime alone,
 * without the router. Serves bench/headers-worker.ts in one workerd per variant (plain,
 * the six `x-ratelimit-*` headers, one header of the same bytes, the answer read whole,
 * both) against the bench's fake upstream, and drives them in alternating rounds (order
 * rotated each round, reversed every other), so the machine's drift falls on all alike.
 * Prints each variant's req/s and workerd CPU per request, pooled, as ratios to plain.
 *
 *   tsx bench/header-cost.ts [--rounds N] [--duration S] [--concurrency N]
 *
 * The limits row of `npm run bench` pays for both parts on every answer (docs/limits.md
 * promises the headers; its usage needs the read), so `read+ratelimit / plain` is the
 * part of `limits / keyed` that no accounting change can take back (bench/README.md).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { processCpuMs, withWorkerdPid } from "./cpu";
import { runLoad } from "./load";
import { startUpstreamProcess } from "./upstream";
import { MODEL, buildPassthrough, startPassthrough } from "./workers";

export const VARIANTS = ["plain", "ratelimit", "one-header", "read", "read+ratelimit"] as const;
const SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), "headers-worker.ts");
const WARMUP_MS = 300; // each round's own warm-up, not measured: connections and the isolate's JIT settle

const USAGE = "Usage: npm run bench:headers -- [--rounds N] [--duration S] [--concurrency N]";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: "string", default: "12" }, duration: { type: "string", default: "3" }, concurrency: { type: "string", default: "16" }, help: { type: "boolean" } } });
  if (values.help) return void console.log(USAGE);
  const rounds = Number(values.rounds);
  const durationMs = Number(values.duration) * 1000;
  const concurrency = Number(values.concurrency);
  if (!(Number.isInteger(rounds) && rounds >= 1 && durationMs > 0 && Number.isInteger(concurrency) && concurrency >= 1)) throw new Error(`bad options\n${USAGE}`);

  const upstream = await startUpstreamProcess();
  const targets: { variant: string; url: string; pid: number | undefined; dispose(): Promise<void> }[] = [];
  try {
    for (const variant of VARIANTS) {
      const options = await buildPassthrough(upstream.url, SOURCE);
      options.bindings = { ...options.bindings, VARIANT: variant };
      targets.push({ variant, ...(await withWorkerdPid(() => startPassthrough(options))) });
    }
    const body = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Say hello in one word." }] });
    const load = (url: string, ms: number) => runLoad({ url, method: "POST", headers: { "content-type": "application/json" }, body, durationMs: ms, concurrency, expectHeader: "x-bench-variant" });
    for (const t of targets) await check(t.url, t.variant, body);

    const pooled = new Map(targets.map((t) => [t.variant, { requests: 0, seconds: 0, cpuMs: 0, errors: 0 }]));
    for (let round = 0; round < rounds; round++) {
      const order = [...targets.slice(round % targets.length), ...targets.slice(0, round % targets.length)];
      if (round % 2) order.reverse();
      for (const t of order) {
        await load(t.url, WARMUP_MS);
        const before = processCpuMs(t.pid ?? -1);
        const r = await load(t.url, durationMs);
        const p = pooled.get(t.variant)!;
        p.cpuMs += processCpuMs(t.pid ?? -1) - before;
        p.requests += r.ok;
        p.seconds += durationMs / 1000;
        p.errors += r.errors;
      }
    }
    const plain = pooled.get("plain")!;
    const rate = (p: typeof plain) => p.requests / p.seconds;
    const cpu = (p: typeof plain) => (p.cpuMs * 1000) / p.requests;
    console.log(`${rounds} rounds of ${durationMs / 1000} s per variant at concurrency ${concurrency}, pooled; workerd CPU from /proc`);
    console.log(`${"variant".padEnd(16)} ${"req/s".padStart(7)} ${"vs plain".padStart(9)} ${"CPU µs/req".padStart(11)} ${"vs plain".padStart(9)}  errors`);
    for (const [variant, p] of pooled) {
      console.log(`${variant.padEnd(16)} ${rate(p).toFixed(0).padStart(7)} ${`${(rate(p) / rate(plain)).toFixed(3)}x`.padStart(9)} ${cpu(p).toFixed(0).padStart(11)} ${`${(cpu(p) / cpu(plain)).toFixed(3)}x`.padStart(9)}  ${p.errors}`);
    }
  } finally {
    for (const t of targets) await t.dispose();
    await upstream.stop();
  }
}

/** Each variant answers as it says: the six headers where it adds them, one where it adds one, the upstream's body either way. */
async function check(url: string, variant: string, body: string): Promise<void> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  const text = await res.text();
  const six = res.headers.has("x-ratelimit-remaining-tokens") && res.headers.has("x-ratelimit-reset-requests");
  const ok = res.status === 200 && res.headers.get("x-bench-variant") === variant && six === variant.endsWith("ratelimit") && res.headers.has("x-ratelimit") === (variant === "one-header") && text.includes("choices");
  if (!ok) throw new Error(`variant ${variant} answered ${res.status} with ${[...res.headers.keys()].join(", ")}: ${text.slice(0, 200)}`);
}

await main();
