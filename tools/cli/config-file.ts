import { readFileSync } from "node:fs";
import type { Config } from "../../src/core/config/schema";
import { toBlob } from "../../src/core/config/blob";
import type { ConfigIssue } from "../../src/core/config/load";
import { parseYamlDocuments } from "../../src/core/config/yaml";

/** `blob` is what publishers store in KV: the validated documents (../config/blob.ts). */
export type CheckedConfig = { text: string; blob: string; config: Config; warnings: ConfigIssue[] };

export interface CheckOptions {
  /** Values `${VAR}` references resolve from. */
  vars: Record<string, unknown>;
  /**
   * "defer" when the values live elsewhere (Worker secrets, for validate/push);
   * "error" when `vars` is exactly what the Worker will see (serve, demo).
   */
  unresolvedVars: "error" | "defer";
}

/**
 * Reads and validates a config file the way every command needs it. Problems go to
 * stderr, one `<path>: <message>` per line, and the result is null: callers exit 1
 * without having started or written anything.
 */
export function checkConfigFile(file: string, opts: CheckOptions): CheckedConfig | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message;
    process.stderr.write(`switchyard: cannot read config file ${file}: ${reason}\n`);
    return null;
  }
  const parsed = parseYamlDocuments(text);
  const result = parsed.ok ? toBlob(parsed.documents, opts.vars, { unresolvedVars: opts.unresolvedVars }) : parsed;
  if (!result.ok) {
    process.stderr.write(`${file} is not a valid Switchyard config (${plural(result.errors.length, "error")}):\n`);
    for (const e of result.errors) process.stderr.write(`${formatIssue(e)}\n`);
    return null;
  }
  return { text, blob: result.blob, config: result.config, warnings: result.warnings };
}

export function formatIssue(issue: ConfigIssue): string {
  return `${issue.path}: ${issue.message}`;
}

export function printWarnings(warnings: ConfigIssue[]): void {
  for (const w of warnings) process.stderr.write(`warning: ${formatIssue(w)}\n`);
}

export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
