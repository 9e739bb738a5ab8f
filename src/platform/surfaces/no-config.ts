import type { ConfigState } from "../config-source";
import { OPENAI_ERRORS } from "./error-style";

/** Why no valid config is serving, so an operator can act. */
export function noConfigMessage(state: ConfigState): string {
  const why = state.readError
    ? `the config store could not be read (${state.readError})`
    : state.rejected
      ? `version ${state.rejected.version} was rejected: ${state.rejected.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`
      : "no config has been published (switchyard push FILE)";
  return `Router has no valid config: ${why}`;
}

/** 503 while no valid config has ever been loaded (OpenAI shape). */
export function noConfig(state: ConfigState): Response {
  return OPENAI_ERRORS.reply(503, noConfigMessage(state), "no_config");
}
