/**
 * A fake vLLM replica (Node only) for tests, the demo and benchmarks: an OpenAI server
 * whose latency comes from a model of vLLM's scheduler, prefix KV cache and LoRA slots,
 * and whose /metrics say what vLLM's would. A router that routes on prefix cache, queue
 * and KV usage wins or loses against it for the reasons it would against vLLM.
 *
 *   token model    tools/fakes/vllm/tokens.ts     cost model  tools/fakes/vllm/costs.ts
 *   KV cache       tools/fakes/vllm/kv-cache.ts   scheduler   tools/fakes/vllm/engine.ts
 *   LoRA           tools/fakes/vllm/lora-slots.ts metrics     tools/fakes/vllm/metrics.ts
 *
 * Besides vLLM's routes (/v1/chat/completions, /v1/completions, /v1/models, /health,
 * /metrics, POST /reset_prefix_cache) it answers GET /fake/stats and POST /fake/reset,
 * so a benchmark can read the replica's own per-request records over HTTP.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import { FAKE_MAX_BODY_BYTES, listenOnLoopback, readBody } from "./loopback";
import type { FakeVllmOptions, FakeVllmServer, VllmStats } from "./fake-vllm-types";
import { Engine } from "./vllm/engine";
import { renderMetrics } from "./vllm/metrics";
import { envelope, finalBody, modelList, parseAsk, refusal, roleChunk, textChunk, usage, usageChunk, type Kind } from "./vllm/openai";
import { applyTuning, resolveOptions } from "./vllm/options";
import { RecordLog } from "./vllm/records";
import { outputWords } from "./vllm/text";
import { tokenize } from "./vllm/tokens";

export type { FakeVllmOptions, FakeVllmServer, FakeVllmTuning, MetricsMode, VllmRequestRecord, VllmStats } from "./fake-vllm-types";

const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"; // prometheus_client's

let nextAnonymousId = 1;

export async function startFakeVllm(opts: FakeVllmOptions = {}): Promise<FakeVllmServer> {
  const config = resolveOptions(opts);
  const id = opts.id ?? `vllm-${nextAnonymousId++}`;
  const engine = new Engine(config);
  const records = new RecordLog();
  let rejected = 0;
  let metricsReads = 0;
  let frozenMetrics: string | null = null; // the text served while metrics are "frozen"

  const stats = (): VllmStats => ({
    id,
    model: config.model,
    options: structuredClone(config),
    running: engine.running,
    waiting: engine.waiting,
    kv: {
      capacityBlocks: config.numGpuBlocks,
      usedBlocks: engine.cache.usedBlocks,
      cachedBlocks: engine.cache.cachedBlocks,
      idleCachedBlocks: engine.cache.idleCachedBlocks,
      evictedBlocks: engine.cache.evicted,
    },
    metricsReads,
    prefixCache: { queriedTokens: engine.totals.queried, hitTokens: engine.totals.hits },
    lora: { loaded: engine.lora.names(), loads: engine.lora.loads, evictions: engine.lora.evictions },
    rejected,
    records: records.snapshot(),
    droppedRecords: records.dropped,
  });
  const resetStats = () => {
    records.clear();
    rejected = 0;
  };

  const server = http.createServer({ noDelay: true }, (req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    res.setHeader("x-fake-vllm", id);
    switch (`${req.method} ${path}`) {
      case "GET /health":
        res.writeHead(config.healthy ? 200 : 503).end(); // vLLM answers an empty 200
        return;
      case "GET /metrics":
        metricsReads++;
        if (config.metrics === "failing") {
          res.writeHead(503, { "content-type": "text/plain; charset=utf-8" }).end("metrics failing (tuned)\n");
          return;
        }
        if (config.metrics === "hanging") return; // held open: the client's timeout, or close(), ends it
        res.writeHead(200, { "content-type": METRICS_CONTENT_TYPE }).end(config.metrics === "frozen" ? frozenMetrics : renderMetrics(engine));
        return;
      case "GET /v1/models":
        return sendJson(res, 200, modelList(config));
      case "POST /reset_prefix_cache":
        engine.cache.resetIdle();
        res.writeHead(200).end();
        return;
      case "GET /fake/stats":
        return sendJson(res, 200, stats());
      case "POST /fake/reset":
        resetStats();
        return sendJson(res, 200, { ok: true });
      case "POST /v1/chat/completions":
        return complete("chat", req, res);
      case "POST /v1/completions":
        return complete("completion", req, res);
    }
    sendJson(res, 404, refusal(404, `No route ${req.method} ${path}`).body);
  }

  async function complete(kind: Kind, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const gone = new AbortController();
    // A client that leaves (or close() cutting it) frees its queue slot, blocks and adapter.
    res.on("close", () => {
      if (!res.writableFinished) gone.abort(new Error("client disconnected"));
    });
    const ask = await readAsk(kind, req);
    if ("status" in ask) {
      rejected++;
      return sendJson(res, ask.status, ask.body);
    }
    const prompt = tokenize(ask.prompt, config.blockSize, { lora: ask.lora, cacheSalt: ask.cacheSalt });
    const needed = engine.blocksNeeded(prompt.tokens, ask.outputTokens);
    if (needed > config.numGpuBlocks) {
      rejected++;
      const most = config.numGpuBlocks * config.blockSize;
      const why = `This model's maximum context length is ${most} tokens. However, you requested ${prompt.tokens + ask.outputTokens} tokens (${prompt.tokens} in the prompt, ${ask.outputTokens} in the completion).`;
      return sendJson(res, 400, refusal(400, why).body);
    }

    const record = records.open({ model: ask.model, lora: ask.lora, stream: ask.stream, promptTokens: prompt.tokens, plannedTokens: ask.outputTokens });
    const base = envelope(ask, randomUUID().replace(/-/g, ""));
    const words = (from: number, count: number) => outputWords(config.seed, prompt.fingerprint, from, count);
    const finish = ask.hitsMaxTokens ? "length" : "stop";
    const tokens = engine.generate(record, prompt, ask.lora, gone.signal);
    const sse = (event: unknown) => res.write(`data: ${JSON.stringify(event)}\n\n`);

    if (ask.stream) {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
      res.flushHeaders(); // vLLM's StreamingResponse sends headers before the prefill is done
    }
    let text = "";
    try {
      for await (const batch of tokens) {
        const piece = words(batch.from, batch.count);
        if (!ask.stream) {
          text += piece;
          continue;
        }
        if (batch.from === 0 && kind === "chat") sse(roleChunk(base));
        const last = batch.from + batch.count === record.plannedTokens;
        sse(textChunk(ask, base, piece, last ? finish : null));
      }
    } catch (err) {
      if (gone.signal.aborted) return; // the client left; the engine has already let go
      throw err;
    }
    const u = usage(record.promptTokens, record.completionTokens, record.cachedTokens);
    if (!ask.stream) return sendJson(res, 200, finalBody(ask, base, text, finish, u));
    if (ask.includeUsage) sse(usageChunk(ask, base, u));
    res.end("data: [DONE]\n\n");
  }

  async function readAsk(kind: Kind, req: http.IncomingMessage): Promise<ReturnType<typeof parseAsk>> {
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req, FAKE_MAX_BODY_BYTES));
    } catch {
      return refusal(400, "request body is not JSON");
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) return refusal(400, "request body must be a JSON object");
    return parseAsk(kind, body as Record<string, unknown>, config);
  }

  const port = await listenOnLoopback(server, opts.port);

  return {
    id,
    port,
    url: `http://127.0.0.1:${port}`,
    stats,
    resetStats,
    tune: (t) => {
      const was = config.metrics;
      applyTuning(config, t);
      if (config.metrics === "frozen" && was !== "frozen") frozenMetrics = renderMetrics(engine); // frozen as of now
      if (config.metrics !== "frozen") frozenMetrics = null;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections(); // running and keep-alive requests would otherwise hold close() open
      }),
  };
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

