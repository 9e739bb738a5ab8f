import type { FakeVllmOptions, FakeVllmServer } from "../../fakes/fake-vllm-types";
import { DEFAULTS, resolveOptions } from "../../fakes/vllm/options";
import { parseFlags, parsePort, UsageError, type Command } from "../args";
import { untilSignal } from "../lifecycle";
import { isPortFree } from "../ports";

const MAX_COUNT = 256; // a fleet for one machine; more is a typo

/** Numeric flags and the option each sets; resolveOptions checks the ranges. */
const NUMBER_FLAGS = {
  "block-size": "blockSize",
  "num-gpu-blocks": "numGpuBlocks",
  "max-num-seqs": "maxNumSeqs",
  "prefill-ms-per-token": "prefillMsPerToken",
  "prefill-overhead-ms": "prefillOverheadMs",
  "decode-ms-per-token": "decodeMsPerToken",
  "decode-ms-per-extra-seq": "decodeMsPerExtraSeq",
  "max-output-tokens": "maxOutputTokens",
  "default-output-tokens": "defaultOutputTokens",
  "stream-tokens-per-chunk": "streamTokensPerChunk",
  "max-lora": "maxLora",
  "lora-load-ms": "loraLoadMs",
  seed: "seed",
} as const satisfies Record<string, keyof FakeVllmOptions>;

const d = DEFAULTS;

export const command: Command = {
  usage: `Usage: switchyard fake-vllm [--port N] [--count N] [options]

Starts N fake vLLM replicas on 127.0.0.1 and prints each one's URL on its own line of
stdout once all of them listen. Each speaks vLLM's OpenAI API (/v1/chat/completions,
/v1/completions, /v1/models, /health, /metrics) with latency from a model of vLLM's
scheduler, prefix KV cache and LoRA slots (README, "Fake vLLM replica"). Ctrl-C stops them.

  --port N                      first port; replicas take N, N+1, ... (default: free ports)
  --count N                     replicas to start (default 1)
  --model NAME                  served model name (default ${d.model})
  --block-size N                tokens per KV block (default ${d.blockSize})
  --num-gpu-blocks N            KV capacity in blocks (default ${d.numGpuBlocks})
  --max-num-seqs N              requests running at once; the rest wait (default ${d.maxNumSeqs})
  --prefill-ms-per-token MS     prefill cost per uncached prompt token (default ${d.prefillMsPerToken})
  --prefill-overhead-ms MS      fixed cost of every prefill (default ${d.prefillOverheadMs})
  --decode-ms-per-token MS      cost of each output token after the first (default ${d.decodeMsPerToken})
  --decode-ms-per-extra-seq MS  added per output token for each other running request (default ${d.decodeMsPerExtraSeq})
  --max-output-tokens N         cap on output tokens, whatever max_tokens says (default ${d.maxOutputTokens})
  --default-output-tokens N     output tokens without max_tokens (default ${d.defaultOutputTokens})
  --stream-tokens-per-chunk N   output tokens per SSE chunk (default ${d.streamTokensPerChunk})
  --lora a,b                    LoRA adapter names served besides the model (default none)
  --max-lora N                  adapters loaded at once (default ${d.maxLora})
  --lora-load-ms MS             cost of loading an adapter that is not loaded (default ${d.loraLoadMs})
  --seed N                      seeds the generated text (default ${d.seed})

Time to first token = queueing + outstanding adapter load + prefill overhead
+ prefill-ms-per-token x uncached prompt tokens, at 1/n speed while n requests prefill at
once (they share the replica); every 4 bytes of the prompt is one token.`,

  async run(argv) {
    const { values, positionals } = parseFlags(argv, {
      port: { type: "string" },
      count: { type: "string" },
      model: { type: "string" },
      lora: { type: "string" },
      ...Object.fromEntries(Object.keys(NUMBER_FLAGS).map((k) => [k, { type: "string" as const }])),
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const count = values.count === undefined ? 1 : Number(values.count);
    if (!Number.isInteger(count) || count < 1 || count > MAX_COUNT) throw new UsageError(`--count must be an integer from 1 to ${MAX_COUNT}, got "${values.count}"`);
    const firstPort = values.port === undefined ? undefined : parsePort(values.port, 0);
    if (firstPort !== undefined && firstPort + count - 1 > 65535) throw new UsageError(`--port ${firstPort} with --count ${count} runs past port 65535`);

    const options: FakeVllmOptions = { model: values.model, loras: values.lora?.split(",").filter(Boolean) };
    for (const [flag, key] of Object.entries(NUMBER_FLAGS)) {
      const raw = (values as Record<string, string | undefined>)[flag];
      if (raw === undefined) continue;
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) throw new UsageError(`--${flag} must be a number, got "${raw}"`);
      options[key] = n;
    }
    // Checked once up front so a bad value is a usage error, not a failure half-way through the fleet.
    try {
      resolveOptions(options);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }

    if (firstPort !== undefined) {
      for (let p = firstPort; p < firstPort + count; p++) {
        if (!(await isPortFree(p))) {
          process.stderr.write(`switchyard fake-vllm: port ${p} is already in use; pick another --port or leave it out for free ports\n`);
          return 1;
        }
      }
    }

    const { startFakeVllm } = await import("../../fakes/fake-vllm");
    const fleet: FakeVllmServer[] = [];
    try {
      for (let i = 0; i < count; i++) {
        fleet.push(await startFakeVllm({ ...options, id: `fake-vllm-${i}`, port: firstPort === undefined ? 0 : firstPort + i }));
      }
      const stopped = untilSignal(); // listening before the URLs go out: a script may signal as soon as it reads them
      process.stdout.write(fleet.map((s) => `${s.url}\n`).join(""));
      const o = fleet[0]!.stats().options;
      process.stderr.write(
        `fake-vllm: ${count} replica${count === 1 ? "" : "s"} of ${o.model} ready (${o.numGpuBlocks} blocks of ${o.blockSize} tokens, ` +
          `max ${o.maxNumSeqs} running${o.loras.length ? `, LoRA ${o.loras.join(",")} max ${o.maxLora}` : ""}); Ctrl-C stops them\n`,
      );
      await stopped;
      return 0;
    } finally {
      await Promise.all(fleet.map((s) => s.close()));
    }
  },
};
