/**
 * Reading a client's request field by field: each reader returns the value or throws a
 * `BadField` naming where it is (`messages.2.content.0.type`) and what was wrong. A
 * translator catches it once, at its top, and answers the client's 400 with it.
 */
import type { Refusal } from "./chat";
import { isRecord } from "./chat";

export class BadField extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(`${param}: ${message}`);
  }
}

/** Runs a translation; a `BadField` becomes the refusal it names. */
export function refusing<T>(translate: () => T): T | Refusal {
  try {
    return translate();
  } catch (error) {
    if (error instanceof BadField) return { ok: false, message: error.message, param: error.param };
    throw error;
  }
}

export function record(v: unknown, path: string): Record<string, unknown> {
  if (!isRecord(v)) throw new BadField(path, "must be an object");
  return v;
}

export function list(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw new BadField(path, "must be an array");
  return v;
}

/** Content that may also be a string, once it is not one: its blocks, or an error that names both forms. */
export function blocks(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw new BadField(path, "must be a string or an array of content blocks");
  return v;
}

export function text(v: unknown, path: string): string {
  if (typeof v !== "string") throw new BadField(path, "must be a string");
  return v;
}

export function optionalText(v: unknown, path: string): string | undefined {
  return v === undefined || v === null ? undefined : text(v, path);
}

/** A finite number in [min, max], or undefined when absent. */
export function optionalNumber(v: unknown, path: string, min: number, max: number): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max) throw new BadField(path, `must be a number from ${min} to ${max}`);
  return v;
}

/** A whole number in [min, max], or undefined when absent. */
export function optionalWhole(v: unknown, path: string, min: number, max: number): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) throw new BadField(path, `must be a whole number from ${min} to ${max}`);
  return v as number;
}

export function optionalBoolean(v: unknown, path: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw new BadField(path, "must be a boolean");
  return v;
}

/** A JSON object's text for a tool call's arguments, as chat completions carry them. */
export function argumentsText(input: unknown, path: string): string {
  if (input === undefined) return "{}";
  return JSON.stringify(record(input, path));
}

/**
 * The texts of a list of `{type: "text", text}` blocks (Anthropic's system and tool
 * results, a chat message's content parts), joined by `separator`; a block of another
 * type is the client's error, worded by `notText`.
 */
export function blockTexts(value: unknown, path: string, separator: string, notText: string): string {
  return blocks(value, path)
    .map((block, i) => {
      const b = record(block, `${path}.${i}`);
      if (b.type !== "text") throw new BadField(`${path}.${i}.type`, notText);
      return text(b.text, `${path}.${i}.text`);
    })
    .join(separator);
}
