import type { Env } from "../env";
import type { ProviderRoute } from "../../core/config/routewise-schema";
import { clock } from "../../lib/clock";
import type { IsolateState } from "../../app/state/isolate-state";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import { envelopeRpc } from "../../app/state/routewise/stubs";
import { probeRoutes } from "../../app/model-call/calibration";
import type { RouteSample } from "../../core/routewise/wire";
import { missingCalibration } from "../../app/state/routewise/views";
import { CLOCK_SKEW_MS, MAX_OUTPUT_TOKENS_ASKED, MAX_REQUEST_MS, MAX_TOKENS_PER_REQUEST, MIN_SEEDED_TTFT_MS } from "../../core/routewise/bounds";
import { parseJsonObject } from "./body";
import type { Call } from "./route";

export const MAX_PROBES_PER_ROUTE = 100; // a calibration, not a load test: each probe is a paid request
export const MAX_SEEDED_SAMPLES = 10_000; // five routes' worth of MAX_SAMPLES_PER_ROUTE
const DEFAULT_PROBE_PROMPT = "Reply with one short sentence about the sea.";
const EPOCH_SECONDS_BELOW = 1e11; // an `at` under this (March 1973 in ms) is far likelier epoch seconds (which pass 1e11 only in 5138)
const DEFAULT_PROBE_MAX_TOKENS = 32; // long enough to measure time per token, short enough to cost little

/**
 * `POST /admin/routewise/<model>/calibrate` (admin token): seeds a RouteWise model's
 * envelope so a quota-bearing model can start serving. Either
 *   `{"probes": N, "prompt"?: text, "max_tokens"?: n, "routes"?: [ids]}` — N streamed probe
 *   requests to each route, one at a time, timed as traffic is (time to first chunk, total,
 *   tokens from the usage chunk); their tokens count against the routes' quotas;
 * or
 *   `{"samples": [{route, ttft_ms, total_ms, prompt_tokens, output_tokens, cached_tokens?, at?}]}` —
 *   recent traffic from the operator's own logs (`at` in epoch ms or ISO, default now), each
 *   field within the bounds of src/core/routewise/bounds.ts (400 naming the field otherwise).
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
    if ("param" in read) return errors.reply(400, read.message, "invalid_samples", {}, read.param);
    samples = read.samples;
  } else {
    const probes = body.probes;
    if (!(typeof probes === "number" && Number.isInteger(probes) && probes >= 1 && probes <= MAX_PROBES_PER_ROUTE)) {
      return errors.reply(400, `Send {"probes": 1..${MAX_PROBES_PER_ROUTE}} to probe each route, or {"samples": [...]} to seed recent traffic`, "invalid_calibration", {}, "probes");
    }
    const prompt = body.prompt ?? DEFAULT_PROBE_PROMPT;
    const maxTokens = body.max_tokens ?? DEFAULT_PROBE_MAX_TOKENS;
    if (typeof prompt !== "string" || prompt === "") return errors.reply(400, "'prompt' must be a non-empty string", "invalid_calibration", {}, "prompt");
    if (!(typeof maxTokens === "number" && Number.isInteger(maxTokens) && maxTokens >= 1 && maxTokens <= MAX_OUTPUT_TOKENS_ASKED)) return errors.reply(400, `'max_tokens' must be a whole number from 1 to ${MAX_OUTPUT_TOKENS_ASKED}`, "invalid_calibration", {}, "max_tokens");
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

/**
 * Samples from the operator's logs, each field checked against the bounds the envelope
 * believes (src/core/routewise/bounds.ts); the first bad one is named by its path.
 */
function readSamples(raw: unknown, spec: RouteWiseSpec): { samples: RouteSample[] } | { param: string; message: string } {
  const bad = (param: string, message: string) => ({ param, message: `${param} ${message}` });
  if (!Array.isArray(raw) || raw.length === 0) return bad("samples", "must be a non-empty array");
  if (raw.length > MAX_SEEDED_SAMPLES) return bad("samples", `holds at most ${MAX_SEEDED_SAMPLES} samples per call`);
  const routes = new Set(spec.routes.map((r) => r.id));
  const now = clock.now();
  const out: RouteSample[] = [];
  for (const [i, s] of raw.entries()) {
    const where = `samples[${i}]`;
    if (s === null || typeof s !== "object") return bad(where, "must be an object");
    const o = s as Record<string, unknown>;
    if (typeof o.route !== "string" || !routes.has(o.route)) return bad(`${where}.route`, `must name a route of model '${spec.model}'`);
    const fields: [keyof Omit<RouteSample, "route" | "at">, string, number, number, boolean][] = [
      ["ttftMs", "ttft_ms", MIN_SEEDED_TTFT_MS, MAX_REQUEST_MS, true],
      ["totalMs", "total_ms", MIN_SEEDED_TTFT_MS, MAX_REQUEST_MS, true],
      ["promptTokens", "prompt_tokens", 0, MAX_TOKENS_PER_REQUEST, true],
      ["outputTokens", "output_tokens", 0, MAX_TOKENS_PER_REQUEST, true],
      ["cachedTokens", "cached_tokens", 0, MAX_TOKENS_PER_REQUEST, false],
    ];
    const sample: RouteSample = { route: o.route, at: now, ttftMs: 0, totalMs: 0, promptTokens: 0, outputTokens: 0, cachedTokens: 0 };
    for (const [key, name, min, max, required] of fields) {
      const v = o[name];
      if (v === undefined && !required) continue;
      if (!(typeof v === "number" && v >= min && v <= max)) return bad(`${where}.${name}`, `must be a number from ${min} to ${max}`);
      sample[key] = v;
    }
    if (sample.totalMs < sample.ttftMs) return bad(`${where}.total_ms`, "must be >= ttft_ms");
    if (sample.cachedTokens > sample.promptTokens) return bad(`${where}.cached_tokens`, "must be <= prompt_tokens");
    if (o.at !== undefined) {
      const at = typeof o.at === "number" ? o.at : typeof o.at === "string" ? Date.parse(o.at) : NaN;
      if (!Number.isFinite(at) || at < 0) return bad(`${where}.at`, "must be epoch ms or an ISO time");
      // A sample from the future would never age out of the envelope's window.
      if (at > now + CLOCK_SKEW_MS) return bad(`${where}.at`, `is in the future (more than ${CLOCK_SKEW_MS / 1000} s ahead of the router's clock)`);
      // The envelope would drop it unseen while the answer counted it seeded; epoch seconds read as ms land here too.
      if (at < now - spec.settings.windowMs) {
        const seconds = at < EPOCH_SECONDS_BELOW ? " (it reads as epoch seconds; send epoch ms)" : "";
        return bad(`${where}.at`, `is older than the envelope's window (envelope_window_s ${spec.settings.windowMs / 1000}), so it would count for nothing${seconds}`);
      }
      sample.at = at;
    }
    out.push(sample);
  }
  return { samples: out };
}
