const decoder = new TextDecoder();

export const MAX_JSON_DEPTH = 128; // nesting of objects and arrays; real requests (tool schemas included) stay far below, and recursive walks stay far from the stack limit

/**
 * Whether JSON text nests objects and arrays deeper than `max`, by one pass over the
 * bytes (brackets, quotes and backslashes are ASCII in UTF-8). Run before anything walks
 * the value recursively: re-encoding a 6,000-deep body overflowed the stack.
 */
export function nestingExceeds(bytes: Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

/** JSON, or not: a body nested past MAX_JSON_DEPTH counts as not JSON, so no recursive walk meets it. */
export function parseJson(bytes: Uint8Array): { ok: true; value: unknown } | { ok: false } {
  if (bytes.byteLength === 0 || nestingExceeds(bytes)) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(decoder.decode(bytes)) };
  } catch {
    return { ok: false };
  }
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Whether every number in a parsed value is finite. JSON.parse reads `1e400` as Infinity,
 * which re-encodes as `null`; a decoder into float64 (Go's, KServe's) refuses it instead.
 */
export function allFinite(value: unknown): boolean {
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(allFinite);
  if (isJsonObject(value)) return Object.values(value).every(allFinite);
  return true;
}

/** JSON with object keys sorted at every level, as Go's encoding/json writes a map. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  if (isJsonObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
