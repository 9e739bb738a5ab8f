/**
 * Runs a compiled path over a parsed JSON value with gjson's semantics. gjson scans raw
 * text; here the same walk is done over JSON.parse output, so a scalar never has children
 * (gjson would search a string's text for a `{` after a `|`; nothing sane relies on that).
 */
import type { CollectStep, KeyStep, ModifierStep, MultipathStep, Path, QueryStep, Step } from "./ast";
import { conditionHolds } from "./compare";
import { MISSING, define, isJson, isObject, own } from "./value";
import type { JsonObject } from "./value";
import { wildcardMatch } from "./wildcard";

/**
 * What a step found, and whether gjson counts it as a hit. The difference shows only
 * under a wildcard key followed by `.`: gjson tries matching keys in order until the rest
 * of the segment hits; `#(...)#` yields a value without a hit, so a later key that hits
 * wins over it, but it stays the answer when none does.
 */
interface Outcome {
  value: unknown;
  hit: boolean;
  /** The rest of the path after the next `|` is to be ignored (see evalQuery). */
  dropRest?: boolean;
}

const NOTHING: Outcome = { value: MISSING, hit: false };

/** The value at `path`, or MISSING. */
export function evalPath(input: unknown, path: Path): unknown {
  let value = input;
  for (const segment of path.segments) {
    if (value === MISSING) return MISSING;
    const outcome = evalSteps(value, segment, 0);
    value = outcome.value;
    if (outcome.dropRest) return value;
  }
  return value;
}

function evalSteps(value: unknown, steps: Step[], i: number): Outcome {
  const step = steps[i];
  if (step === undefined) return { value, hit: true };
  switch (step.kind) {
    case "key":
      return evalKey(value, step, steps, i);
    case "count":
      if (Array.isArray(value)) return evalSteps(value.length, steps, i + 1);
      return evalKey(value, HASH_KEY, steps, i); // on an object gjson looks up the key "#"
    case "collect":
      return evalCollect(value, step);
    case "query":
      return evalQuery(value, step);
    case "modifier":
      return evalSteps(applyModifier(value, step), steps, i + 1);
    case "multipath":
      return evalSteps(buildMultipath(value, step), steps, i + 1);
  }
}

const HASH_KEY: KeyStep = { kind: "key", text: "#", wild: false, index: null };

function evalKey(value: unknown, step: KeyStep, steps: Step[], i: number): Outcome {
  if (Array.isArray(value)) {
    // Wildcards never apply to arrays, and neither do escapes: `\1` is no index.
    const child: unknown = step.index === null ? undefined : value[step.index];
    return isJson(child) ? evalSteps(child, steps, i + 1) : NOTHING;
  }
  if (!isObject(value)) return NOTHING;
  if (!step.wild) {
    const child = own(value, step.text);
    return child === MISSING ? NOTHING : evalSteps(child, steps, i + 1);
  }
  let fallback = NOTHING;
  for (const key of Object.keys(value)) {
    if (!wildcardMatch(key, step.text)) continue;
    const child = own(value, key);
    if (child === MISSING) continue;
    const outcome = evalSteps(child, steps, i + 1);
    if (outcome.hit) return outcome;
    if (fallback.value === MISSING) fallback = outcome;
  }
  return fallback;
}

function evalCollect(value: unknown, step: CollectStep): Outcome {
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const element of value) {
      if (!isJson(element)) continue;
      const found = evalPath(element, step.each);
      if (found !== MISSING) out.push(found);
    }
    return { value: out, hit: true };
  }
  if (!isObject(value)) return NOTHING;
  const child = own(value, "#");
  const found = child === MISSING ? MISSING : evalPath(child, step.each);
  return { value: found, hit: found !== MISSING };
}

function evalQuery(value: unknown, step: QueryStep): Outcome {
  // gjson only iterates arrays; `[@this].#(...)` is how a condition tests the root object.
  if (!Array.isArray(value)) return NOTHING;
  if (!step.all) {
    for (const element of value) {
      // The first match decides, even when the rest of the path then finds nothing.
      if (matches(element, step)) return { value: step.each ? evalPath(element, step.each) : element, hit: true };
    }
    return NOTHING;
  }
  const out: unknown[] = [];
  let matched = false;
  for (const element of value) {
    if (!matches(element, step)) continue;
    matched = true;
    const found = step.each ? evalPath(element, step.each) : element;
    if (found !== MISSING) out.push(found);
  }
  // Always a value, `[]` included: `#(...)#` exists on any array, matches or not. And
  // gjson only takes note of a `|` after `#(...)#.rest` when some element matched, so
  // with no match `a.#(x>9)#.y|0` is `[]`, not missing: the `|0` is never applied.
  return { value: out, hit: false, dropRest: step.each !== null && !matched };
}

function matches(element: unknown, step: QueryStep): boolean {
  const { cond } = step;
  if (!isJson(element)) return false;
  if (typeof element === "object" && element !== null) return conditionHolds(cond, evalPath(element, cond.path));
  // A scalar element can only be compared as itself: `children.#(%"*a*")`.
  return cond.empty && conditionHolds(cond, element);
}

function applyModifier(value: unknown, step: ModifierStep): unknown {
  if (step.name === "this" || value === MISSING) return value;
  if (Array.isArray(value)) return [...value].reverse();
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const key of Object.keys(value).reverse()) define(out, key, value[key]);
  return out;
}

function buildMultipath(value: unknown, step: MultipathStep): unknown {
  if (step.shape === "array") {
    const out: unknown[] = [];
    for (const entry of step.entries) {
      const found = evalPath(value, entry.path);
      if (found !== MISSING) out.push(found);
    }
    return out;
  }
  const out: JsonObject = {};
  for (const entry of step.entries) {
    const found = evalPath(value, entry.path);
    const name = entry.name ?? "_";
    // gjson writes duplicate keys into its text and a later lookup sees the first.
    if (found !== MISSING && !Object.hasOwn(out, name)) define(out, name, found);
  }
  return out;
}

/** The root value as the evaluator sees it: undefined and non-JSON values are missing. */
export function rootValue(document: unknown): unknown {
  return document !== undefined && isJson(document) ? document : MISSING;
}
