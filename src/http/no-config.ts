import type { ConfigState } from "../kv/config-source";
import { openAIError } from "./openai-error";

/** 503 while no valid config has ever been loaded; says why, so an operator can act. */
export function noConfig(state: ConfigState): Response {
  const why = state.readError
    ? `the config store could not be read (${state.readError})`
    : state.rejected
      ? `version ${state.rejected.version} was rejected: ${state.rejected.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`
      : "no config has been published (switchyard push FILE)";
  return openAIError(503, { message: `Router has no valid config: ${why}`, type: "service_unavailable", code: "no_config" });
}
