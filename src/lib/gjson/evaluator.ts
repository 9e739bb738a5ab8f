/**
 * Runs a compiled path over a parsed JSON value with gjson's semantics. gjson scans raw
 * text; here the same walk is done over JSON.parse output, so a scalar never has children
 * (gjson would search a string's text for a `{` after a `|`; nothing sane relies on that).
 */
import type { CollectStep, KeyStep, MultipathStep, Path, QueryStep, Step } from "./ast";
import { conditionHolds } from "./compare";
import { applyModifier, embeddable } from "./modifiers";
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
  /**
   * With nothing found: gjson had already taken note of the `|` that follows, so the rest
   * of the path still runs, on nothing. It does once its scan reached the container in
   * which the segment's last step looks (`a|@keys` with `a` missing is `[]`), but not
   * when an earlier step already failed (`x.a|@keys` with `x` missing is nothing).
   */
  reached: boolean;
  /** The rest of the path after the next `|` is to be ignored (see evalQuery). */
  dropRest?: boolean;
}

const found = (value: unknown): Outcome => ({ value, hit: value !== MISSING, reached: true });
const miss = (reached: boolean): Outcome => ({ value: MISSING, hit: false, reached });

/** The value at `path`, or MISSING. `input` may be MISSING: gjson's Get on empty text. */
export function evalPath(input: unknown, path: Path): unknown {
  return walkPath(input, path).value;
}

function walkPath(input: unknown, path: Path): Outcome {
  let outcome = found(input); // a Get always runs its path, on nothing too
  for (const segment of path.segments) {
    if (outcome.value === MISSING && !outcome.reached) return outcome;
    const next = evalSteps(outcome.value, segment, 0);
    if (next.dropRest) return next;
    outcome = next;
  }
  return outcome;
}

function evalSteps(value: unknown, steps: Step[], i: number): Outcome {
  const step = steps[i];
  if (step === undefined) return found(value);
  const last = i === steps.length - 1;
  switch (step.kind) {
    case "key":
      return evalKey(value, step, steps, i);
    case "count":
      if (Array.isArray(value)) return evalSteps(value.length, steps, i + 1);
      return evalKey(value, HASH_KEY, steps, i); // on an object gjson looks up the key "#"
    case "collect":
      return evalCollect(value, step);
    case "query":
      return evalQuery(value, step, last);
    // Modifiers, literals and multipaths start a segment and end it (the parser splits
    // after them): gjson hands their result to the rest of the path whatever it is.
    case "modifier":
      return found(applyModifier(value, step, evalPath));
    case "literal":
      return found(step.value);
    case "multipath":
      return found(buildMultipath(value, step));
  }
}

const HASH_KEY: KeyStep = { kind: "key", text: "#", wild: false, index: null };

function evalKey(value: unknown, step: KeyStep, steps: Step[], i: number): Outcome {
  const last = i === steps.length - 1;
  if (Array.isArray(value)) {
    // Wildcards never apply to arrays, and neither do escapes: `\1` is no index.
    const child: unknown = step.index === null ? undefined : value[step.index];
    return isJson(child) ? evalSteps(child, steps, i + 1) : miss(last);
  }
  if (!isObject(value)) return miss(false);
  if (!step.wild) {
    const child = own(value, step.text);
    return child === MISSING ? miss(last) : evalSteps(child, steps, i + 1);
  }
  let fallback = miss(last);
  for (const key of Object.keys(value)) {
    if (!wildcardMatch(key, step.text)) continue;
    const child = own(value, key);
    if (child === MISSING) continue;
    const outcome = evalSteps(child, steps, i + 1);
    if (outcome.hit) return outcome;
    // gjson keeps the first value found without a hit, and keeps any `|` it took note of.
    const reached = fallback.reached || outcome.reached;
    fallback = fallback.value === MISSING ? { ...outcome, reached } : { ...fallback, reached };
  }
  return fallback;
}

function evalCollect(value: unknown, step: CollectStep): Outcome {
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const element of value) {
      if (!isJson(element)) continue;
      const got = evalPath(element, step.each);
      if (got !== MISSING) out.push(got);
    }
    return found(embeddable(out));
  }
  if (!isObject(value)) return miss(false);
  // On an object `#` is a key. `#.@x` reads as `#|@x`, which runs even when `#` is missing.
  const child = own(value, "#");
  if (child === MISSING) return step.eachPipes ? onNothing(step.each) : miss(false);
  const outcome = walkPath(child, step.each);
  return { value: outcome.value, hit: outcome.value !== MISSING, reached: outcome.reached };
}

/** The rest of a segment run on nothing, as gjson does after a `|` it took note of. */
function onNothing(path: Path): Outcome {
  const outcome = walkPath(MISSING, path);
  return { value: outcome.value, hit: outcome.value !== MISSING, reached: outcome.reached };
}

function evalQuery(value: unknown, step: QueryStep, last: boolean): Outcome {
  if (isObject(value)) return queryOnObject(step, last);
  // gjson only iterates arrays; `[@this].#(...)` is how a condition tests the root object.
  if (!Array.isArray(value)) return miss(false);
  if (!step.all) {
    for (const element of value) {
      // The first match decides, even when the rest of the path then finds nothing; gjson
      // has then taken note of any `|` after it.
      if (!matches(element, step)) continue;
      return { value: step.each ? evalPath(element, step.each) : element, hit: true, reached: true };
    }
    return miss(last && !step.each);
  }
  const out: unknown[] = [];
  let matched = false;
  for (const element of value) {
    if (!matches(element, step)) continue;
    matched = true;
    const got = step.each ? evalPath(element, step.each) : element;
    if (got !== MISSING) out.push(got);
  }
  // Always a value, `[]` included: `#(...)#` exists on any array, matches or not. And
  // gjson only takes note of a `|` after `#(...)#.rest` when some element matched, so
  // with no match `a.#(x>9)#.y|0` is `[]`, not missing: the `|0` is never applied.
  const collected = embeddable(out);
  return { value: collected, hit: false, reached: true, dropRest: step.each !== null && !matched };
}

/**
 * gjson reads a query on an object as an object key (the query text), practically never
 * present. Only when that text is one whole key does a following `|` (or a `.` before
 * `@`, `[` or `{`) still run, on nothing; the parser rejects the query texts that gjson
 * would cut into a key and a path that yields something on nothing.
 */
function queryOnObject(step: QueryStep, last: boolean): Outcome {
  if (!step.wholeKey) return miss(false);
  if (step.each) return step.eachPipes ? onNothing(step.each) : miss(false);
  return miss(last);
}

function matches(element: unknown, step: QueryStep): boolean {
  const { cond } = step;
  if (!isJson(element)) return false;
  if (typeof element === "object" && element !== null) return conditionHolds(cond, evalPath(element, cond.path));
  // A scalar element can only be compared as itself: `children.#(%"*a*")`.
  return cond.empty && conditionHolds(cond, element);
}

function buildMultipath(value: unknown, step: MultipathStep): unknown {
  if (step.shape === "array") {
    const out: unknown[] = [];
    for (const entry of step.entries) {
      const got = evalPath(value, entry.path);
      if (got !== MISSING) out.push(got);
    }
    return embeddable(out);
  }
  const out: JsonObject = {};
  for (const entry of step.entries) {
    const got = evalPath(value, entry.path);
    const name = entry.name ?? "_";
    // gjson writes duplicate keys into its text and a later lookup sees the first.
    if (got !== MISSING && !Object.hasOwn(out, name)) define(out, name, got);
  }
  return embeddable(Object.values(out)) === MISSING ? MISSING : out;
}

/** The root value as the evaluator sees it: undefined and non-JSON values are missing. */
export function rootValue(document: unknown): unknown {
  return document !== undefined && isJson(document) ? document : MISSING;
}
