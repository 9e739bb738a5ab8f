/**
 * Drives the Worker under test from inside workerd: the real fetch handler, the real
 * local KV. Config goes in through the admin endpoint, as an operator would publish it.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { IsolateState } from "../../src/app/state/isolate-state";
import { CONFIG_POINTER_KEY, configBlobKey, configVersionId } from "../../src/core/config/kv-keys";
import { cryptoRandom } from "../../src/lib/random";
import { ConfigSource } from "../../src/platform/config-source";
import type { AppDeps } from "../../src/platform/surfaces/app";
import { createApp } from "../../src/platform/surfaces/app";

export const ADMIN_TOKEN = "test-admin-token"; // matches vitest.config.ts bindings

export function routerFetch(path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(`https://router.test${path}`, init));
}

/**
 * One request to a fresh router isolate (the same app, its own config cache and state) whose
 * env differs from the test Worker's, e.g. without ADMIN_TOKEN; `deps` replaces its parts.
 */
export async function isolateFetch(path: string, init: RequestInit, envChanges: Record<string, unknown>, deps: Partial<AppDeps> = {}): Promise<Response> {
  const state = new IsolateState();
  const app = createApp({ configSource: new ConfigSource(), random: cryptoRandom(), state, ...deps });
  const ctx = createExecutionContext();
  try {
    return await app.fetch(new Request(`https://router.test${path}`, init), { ...env, ...envChanges }, ctx);
  } finally {
    await waitOnExecutionContext(ctx);
    state.dispose();
  }
}

export async function publish(yaml: string): Promise<string> {
  const res = await routerFetch("/admin/config", { method: "PUT", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: yaml });
  const body = await res.text();
  if (res.status !== 201) throw new Error(`publish failed ${res.status}: ${body}`);
  return (JSON.parse(body) as { version: string }).version;
}

/** Writes a version straight to KV, skipping validation, as a buggy publisher could. */
export async function publishUnchecked(text: string): Promise<string> {
  const version = await configVersionId(text);
  await env.CONFIG.put(configBlobKey(version), text);
  await env.CONFIG.put(CONFIG_POINTER_KEY, version);
  return version;
}

export function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return routerFetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export const chat = (model: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }], ...extra }, headers);

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

/** Asserts the OpenAI error shape and returns it. */
export async function openAIErrorOf(res: Response): Promise<OpenAIErrorBody["error"]> {
  const body = (await res.json()) as OpenAIErrorBody;
  if (!body.error || typeof body.error.message !== "string" || typeof body.error.type !== "string" || !("code" in body.error) || !("param" in body.error)) {
    throw new Error(`not an OpenAI error object: ${JSON.stringify(body)}`);
  }
  return body.error;
}

/** A one-pool config over the given replicas. */
export function poolConfig(
  replicas: { id: string; url: string; weight?: number; api_key?: string; labels?: string[] }[],
  extra = "",
  model = "m",
): string {
  const lines = replicas.map(
    (r) =>
      `      - { id: ${JSON.stringify(r.id)}, url: ${JSON.stringify(r.url)}, weight: ${r.weight ?? 1}${r.api_key ? `, api_key: ${JSON.stringify(r.api_key)}` : ""}${r.labels ? `, labels: ${JSON.stringify(r.labels)}` : ""} }`,
  );
  return `models:\n  ${model}: { pool: p }\npools:\n  p:\n    replicas:\n${lines.join("\n")}\n${extra}`;
}
