import type { Env } from "../env";
import type { ProviderRoute } from "../../core/config/routewise-schema";
import { clock } from "../../lib/clock";
import type { IsolateState } from "../../app/state/isolate-state";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import { envelopeRpc } from "../../app/state/routewise/stubs";
import { probeRoutes } from "../../app/model-call/calibration";
import type { RouteSample } from "../../core/routewise/wire";
import { missingCalibration } from "../../app/state/routewise/views";
import { parseJsonObject } from "./body";
import type { Call } from "./route";

export const MAX_PROBES_PER_ROUTE = 100; // a calibration, not a load test: each probe is a paid request
export const MAX_SEEDED_SAMPLES = 10_000; // five routes' worth of MAX_SAMPLES_PER_ROUTE
const DEFAULT_PROBE_PROMPT = "Reply with one short sentence about the sea.";
const DEFAULT_PROBE_MAX_TOKENS = 32; // long enough to measure time per token, short enough to cost little

/**
 * `POST /admin/routewise/<model>/calibrate` (admin token): seeds a RouteWise model's
 * envelope so a quota-bearing model can start serving. Either
 *   `{"probes": N, "prompt"?: text, "max_tokens"?: n, "routes"?: [ids]}` — N streamed probe
 *   requests to each route, one at a time, timed as traffic is (time to first chunk, total,
 *   tokens from the usage chunk); their tokens count against the routes' quotas;
 * or
 *   `{"samples": [{route, ttft_ms, total_ms, prompt_tokens, output_tokens, cached_tokens?, at?}]}` —
 *   recent traffic from the operator's own logs, taken as is (`at` in epoch ms or ISO, default now).
 */
export async function calibrate(call: Call<"required">): Promise<Response> {
  const { env, errors } = call;
  const isolate = call.deps.state;
  const model = call.params.model!;
  const spec = call.snapshot.routewise.get(model);
  if (!spec) return errors.reply(404, `No RouteWise model '${model}' in the serving config`, "model_not_found", {}, "model");
  const parsed = parseJsonObject(call.body);
  if (!parsed.ok) return errors.reply(parsed.problem.status, parsed.problem.message, parsed.problem.code);
  const body = parsed.json;

  let samples: RouteSample[];
  let failures: Record<string, string> = {};
  if (body.samples !== undefined) {
    const read = readSamples(body.samples, spec);
    if (typeof read === "string") return errors.reply(400, read, "invalid_samples", {}, "samples");
    samples = read;
  } else {
    const probes = body.probes;
    if (!(typeof probes === "number" && Number.isInteger(probes) && probes >= 1 && probes <= MAX_PROBES_PER_ROUTE)) {
      return errors.reply(400, `Send {"probes": 1..${MAX_PROBES_PER_ROUTE}} to probe each route, or {"samples": [...]} to seed recent traffic`, "invalid_calibration", {}, "probes");
    }
    const prompt = body.prompt ?? DEFAULT_PROBE_PROMPT;
    const maxTokens = body.max_tokens ?? DEFAULT_PROBE_MAX_TOKENS;
    if (typeof prompt !== "string" || prompt === "") return errors.reply(400, "'prompt' must be a non-empty string", "invalid_calibration", {}, "prompt");
    if (!(typeof maxTokens === "number" && Number.isInteger(maxTokens) && maxTokens >= 1)) return errors.reply(400, "'max_tokens' must be a positive integer", "invalid_calibration", {}, "max_tokens");
    const wanted = body.routes === undefined ? spec.routes : pickRoutes(body.routes, spec);
    if (typeof wanted === "string") return errors.reply(400, wanted, "unknown_route", {}, "routes");
    const probed = await probeRoutes({ env, ctx: call.ctx, state: isolate, signal: call.request.signal, routing: call.snapshot.config.routing }, spec, wanted, { probes, prompt, maxTokens });
    samples = probed.samples;
    failures = probed.failures;
  }

  const view = await envelopeRpc(env, spec.model).seed(spec.settings, samples);
  await Promise.all([...isolate.routewiseAgents.quotas.values()].map((q) => q.flush())); // probes' tokens reach their quotas now
  const counts = Object.fromEntries(spec.routes.map((r) => [r.id, view.envelopes[r.id]?.samples ?? 0]));
  const missing = spec.quotaBearing ? missingCalibration(spec, { envelope: (r) => view.envelopes[r] ?? null }) : [];
  // The next request in this isolate sees the seeded envelope at once.
  await isolate.routewiseAgents.models.get(spec.model)?.flush();
  return new Response(JSON.stringify({ model: spec.model, seeded: samples.length, samples: counts, failures, calibrated: missing.length === 0, min_samples: spec.params.envelope_min_samples }, null, 2), {
    headers: { "content-type": "application/json" },
  });
}

function pickRoutes(routes: unknown, spec: RouteWiseSpec): ProviderRoute[] | string {
  if (!Array.isArray(routes) || routes.some((r) => typeof r !== "string")) return "'routes' must be an array of route ids";
  const byId = new Map(spec.routes.map((r) => [r.id, r]));
  const unknown = (routes as string[]).filter((r) => !byId.has(r));
  if (unknown.length > 0) return `Model '${spec.model}' has no route ${unknown.map((r) => `'${r}'`).join(", ")}`;
  return (routes as string[]).map((r) => byId.get(r)!);
}

function readSamples(raw: unknown, spec: RouteWiseSpec): RouteSample[] | string {
  if (!Array.isArray(raw) || raw.length === 0) return "'samples' must be a non-empty array";
  if (raw.length > MAX_SEEDED_SAMPLES) return `at most ${MAX_SEEDED_SAMPLES} samples per call`;
  const routes = new Set(spec.routes.map((r) => r.id));
  const now = clock.now();
  const out: RouteSample[] = [];
  for (const [i, s] of raw.entries()) {
    const where = `samples[${i}]`;
    if (s === null || typeof s !== "object") return `${where} must be an object`;
    const o = s as Record<string, unknown>;
    if (typeof o.route !== "string" || !routes.has(o.route)) return `${where}.route must name a route of model '${spec.model}'`;
    const num = (key: string, required: boolean): number | string => {
      const v = o[key];
      if (v === undefined && !required) return 0;
      return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : `${where}.${key} must be a number >= 0`;
    };
    const fields = { ttftMs: num("ttft_ms", true), totalMs: num("total_ms", true), promptTokens: num("prompt_tokens", true), outputTokens: num("output_tokens", true), cachedTokens: num("cached_tokens", false) };
    for (const v of Object.values(fields)) if (typeof v === "string") return v;
    const at = o.at === undefined ? now : typeof o.at === "number" ? o.at : typeof o.at === "string" ? Date.parse(o.at) : NaN;
    if (!Number.isFinite(at)) return `${where}.at must be epoch ms or an ISO time`;
    const f = fields as Record<keyof typeof fields, number>;
    if (f.totalMs < f.ttftMs) return `${where}.total_ms must be >= ttft_ms`;
    out.push({ route: o.route, at, ...f });
  }
  return out;
}
