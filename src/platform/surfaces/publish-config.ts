import { parseYaml, toBlob } from "../../core/config/blob";
import { announceQuotas, announceSpecs } from "../../app/state/announce";
import { buildRouteWiseSpecs } from "../../core/routewise/spec";
import { buildPoolSpecs } from "../../core/pool/spec";
import { CONFIG_POINTER_KEY, configBlobKey, configVersionId } from "../../core/config/kv-keys";
import type { Call } from "./route";

export const MAX_CONFIG_BYTES = 1024 * 1024; // far above any real config; well under KV's 25 MiB value limit

// Lossy, as request.text() was: a stray invalid byte becomes U+FFFD and the parser words the problem.
const UTF8 = new TextDecoder();

/**
 * `PUT /admin/config`: validate and publish a config document (YAML or JSON text), read
 * within MAX_CONFIG_BYTES by the preamble. It is stored in the blob format
 * (../../core/config/blob.ts), so isolates load it without YAML. Blob first, pointer
 * second, so no reader ever follows a pointer to a missing blob.
 */
export async function publishConfig(call: Call<"none">): Promise<Response> {
  const { env, ctx } = call;
  const parsed = await parseYaml(UTF8.decode(call.body));
  const result = parsed.ok ? toBlob(parsed.documents, env) : parsed;
  if (!result.ok) {
    const body = {
      error: {
        message: `Config rejected: ${result.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`,
        type: "invalid_request_error",
        param: null,
        code: "invalid_config",
      },
      issues: result.errors,
    };
    return new Response(JSON.stringify(body), { status: 400, headers: { "content-type": "application/json" } });
  }

  const version = await configVersionId(result.blob);
  await env.CONFIG.put(configBlobKey(version), result.blob);
  await env.CONFIG.put(CONFIG_POINTER_KEY, version);
  call.deps.configSource.invalidate();
  // Health checks start now, not on each pool's first request.
  if (result.config.routing.shared_state) ctx.waitUntil(announceSpecs(env, buildPoolSpecs(result.config, version, (url) => result.redactions.atRest(url))));
  // Quotas poll their usage APIs from now on, before the first request needs them.
  ctx.waitUntil(announceQuotas(env, buildRouteWiseSpecs(result.config, version, (url) => result.redactions.atRest(url))));
  return new Response(JSON.stringify({ version, warnings: result.warnings }), {
    status: 201,
    headers: { "content-type": "application/json" },
  });
}
