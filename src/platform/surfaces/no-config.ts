import type { ConfigState } from "../config-source";

/** Why no valid config is serving, so an operator can act. */
export function noConfigMessage(state: ConfigState): string {
  const why = state.readError
    ? `the config store could not be read (${state.readError})`
    : state.rejected
      ? `version ${state.rejected.version} was rejected: ${state.rejected.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`
      : "no config has been published (switchyard push FILE)";
  return `Router has no valid config: ${why}`;
}
