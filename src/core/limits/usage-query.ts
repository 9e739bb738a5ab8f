import { SPEND_WINDOWS } from "../config/limits-schema";
import type { UsageFilter } from "./rules";
import { isTenantName } from "./principal";
import type { WindowKind } from "./wire";

/** The windows a dimension is counted in, as GET /admin/usage names them (`none`: concurrency). */
export const USAGE_WINDOWS: readonly WindowKind[] = ["minute", ...SPEND_WINDOWS, "none"];

/** What the config names, for checking a query against it. */
export interface KnownNames {
  keys: ReadonlySet<string>;
  teams: ReadonlySet<string>;
  /** Models and graphs: a graph's own requests are charged under its name. */
  models: ReadonlySet<string>;
}

export type UsageQuery = { ok: true; filter: UsageFilter; window?: WindowKind } | { ok: false; param: string; message: string };

const NAMED = { key: "keys", team: "teams", model: "models" } as const;

/**
 * GET /admin/usage's query, checked: only `key`, `team`, `model`, `tenant` and `window`,
 * each at most once and not empty; a key, team or model the config names; a tenant as
 * X-Switchyard-Tenant takes it; a window a limit is counted in. A typo is refused, naming
 * the parameter, rather than answered with an unfiltered or empty list that looks right.
 */
export function parseUsageQuery(params: URLSearchParams, known: KnownNames): UsageQuery {
  const filter: UsageFilter = {};
  let window: WindowKind | undefined;
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name);
    if (!(name in NAMED) && name !== "tenant" && name !== "window") {
      return { ok: false, param: name, message: `Unknown query parameter '${name}': GET /admin/usage takes key, team, model, tenant and window` };
    }
    if (values.length > 1) return { ok: false, param: name, message: `'${name}' is given ${values.length} times; give it once` };
    const value = values[0]!;
    if (value === "") return { ok: false, param: name, message: `'${name}' is empty; give a name or leave it out` };
    if (name === "tenant") {
      if (!isTenantName(value)) return { ok: false, param: name, message: "'tenant' must be 1-128 characters of letters, digits and . _ : @ -, starting with a letter or digit, as X-Switchyard-Tenant" };
      filter.tenant = value;
    } else if (name === "window") {
      if (!(USAGE_WINDOWS as readonly string[]).includes(value)) return { ok: false, param: name, message: `'window' must be one of ${USAGE_WINDOWS.join(", ")}; got '${value}'` };
      window = value as WindowKind;
    } else {
      const field = name as keyof typeof NAMED;
      if (!known[NAMED[field]].has(value)) return { ok: false, param: name, message: `No ${field} named '${value}' in the serving config` };
      filter[field] = value;
    }
  }
  return { ok: true, filter, ...(window !== undefined && { window }) };
}
