import { readFileSync } from "node:fs";

/**
 * KEY=VALUE lines in the dotenv dialect wrangler accepts for `.dev.vars`: `#` comments,
 * an optional `export ` prefix, single or double quotes (double quotes expand \n).
 * Values never leave this module except as Worker bindings, so they are never logged.
 */
export function parseEnvText(text: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    vars[m[1]!] = unquote(m[2]!);
  }
  return vars;
}

function unquote(value: string): string {
  const quote = value[0];
  if ((quote === '"' || quote === "'") && value.length >= 2) {
    const end = value.lastIndexOf(quote);
    if (end > 0) {
      const inner = value.slice(1, end);
      return quote === '"' ? inner.replace(/\\n/g, "\n").replace(/\\"/g, '"') : inner;
    }
  }
  // Unquoted values may carry a trailing comment, as in dotenv.
  return value.replace(/\s+#.*$/, "").trim();
}

export function readEnvFile(path: string): Record<string, string> {
  return parseEnvText(readFileSync(path, "utf8"));
}
