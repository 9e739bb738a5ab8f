/**
 * GJSON path evaluation (src/graph/gjson), the engine behind InferenceGraph conditions.
 * Every expected value in the vector tables below was produced by gjson itself (Go,
 * tidwall/gjson with v1.18's query semantics) on the same document and path, so these
 * tables pin "same answer as KServe", not our reading of the docs.
 */
import { describe, expect, it } from "vitest";
import { GjsonSyntaxError, compilePath, exists, get } from "../../src/graph/gjson";

/** Marks a vector where gjson finds nothing (Exists() is false). */
const NONE = Symbol("none");
type Vector = [path: string, want: unknown];

function check(doc: unknown, path: string, want: unknown): void {
  const compiled = compilePath(path);
  const result = get(doc, compiled);
  expect(exists(doc, compiled)).toBe(want !== NONE);
  expect(result.exists).toBe(want !== NONE);
  if (want === NONE) {
    expect(result).toEqual({ exists: false, type: null, value: undefined, raw: null });
  } else {
    expect(result.value).toEqual(want);
    expect(JSON.parse(result.raw ?? "")).toEqual(want);
  }
}

// The example document of gjson's README.md and SYNTAX.md.
const README_DOC = {
  name: { first: "Tom", last: "Anderson" },
  age: 37,
  children: ["Sara", "Alex", "Jack"],
  "fav.movie": "Deer Hunter",
  friends: [
    { first: "Dale", last: "Murphy", age: 44, nets: ["ig", "fb", "tw"] },
    { first: "Roger", last: "Craig", age: 68, nets: ["fb", "tw"] },
    { first: "Jane", last: "Murphy", age: 47, nets: ["ig", "tw"] },
  ],
};

// README/SYNTAX examples first (in document order), then edges around them.
const README_VECTORS: Vector[] = [
  ["name.last", "Anderson"],
  ["age", 37],
  ["children", ["Sara", "Alex", "Jack"]],
  ["children.#", 3],
  ["children.1", "Alex"],
  ["child*.2", "Jack"],
  ["c?ildren.0", "Sara"],
  ["fav\\.movie", "Deer Hunter"],
  ["friends.#.first", ["Dale", "Roger", "Jane"]],
  ["friends.1.last", "Craig"],
  ["name.first", "Tom"],
  ["children.0", "Sara"],
  ["friends.1", {"first": "Roger", "last": "Craig", "age": 68, "nets": ["fb", "tw"]}],
  ["friends.1.first", "Roger"],
  ["friends.#.age", [44, 68, 47]],
  ["friends.#(last==\"Murphy\").first", "Dale"],
  ["friends.#(last==\"Murphy\")#.first", ["Dale", "Jane"]],
  ["friends.#(age>45)#.last", ["Craig", "Murphy"]],
  ["friends.#(first%\"D*\").last", "Murphy"],
  ["friends.#(first!%\"D*\").last", "Craig"],
  ["friends.#(nets.#(==\"fb\"))#.first", ["Dale", "Roger"]],
  ["children.#(!%\"*a*\")", "Alex"],
  ["children.#(%\"*a*\")#", ["Sara", "Jack"]],
  ["friends.0.first", "Dale"],
  ["friends|0.first", "Dale"],
  ["friends.0|first", "Dale"],
  ["friends|0|first", "Dale"],
  ["friends|#", 3],
  ["friends.#", 3],
  ["friends.#(last=\"Murphy\")#", [{"first": "Dale", "last": "Murphy", "age": 44, "nets": ["ig", "fb", "tw"]}, {"first": "Jane", "last": "Murphy", "age": 47, "nets": ["ig", "tw"]}]],
  ["friends.#(last=\"Murphy\")#.first", ["Dale", "Jane"]],
  ["friends.#(last=\"Murphy\")#|first", NONE],
  ["friends.#(last=\"Murphy\")#.0", []],
  ["friends.#(last=\"Murphy\")#|0", {"first": "Dale", "last": "Murphy", "age": 44, "nets": ["ig", "fb", "tw"]}],
  ["friends.#(last=\"Murphy\")#.#", []],
  ["friends.#(last=\"Murphy\")#|#", 2],
  ["children.@reverse", ["Jack", "Alex", "Sara"]],
  ["children.@reverse.0", "Jack"],
  ["children|@reverse|0", "Jack"],
  ["{name.first,age,\"the_murphys\":friends.#(last=\"Murphy\")#.first}", {"first": "Tom", "age": 37, "the_murphys": ["Dale", "Jane"]}],
  ["[name.first,age,children.0]", ["Tom", 37, "Sara"]],
  ["@this.name.first", "Tom"],
  ["[@this].#(age==37).name.first", "Tom"],
  ["[@this].#(age==36)", NONE],
  ["friends.#(last==\"Nobody\")", NONE],
  ["friends.#(last==\"Nobody\")#", []],
  ["friends.#(last==\"Murphy\").missing", NONE],
  ["friends.#(last==\"Murphy\")#.missing", []],
  ["friends.#(age>100)#.first|0", []],
  ["friends.#(age>40)#.first|0", "Dale"],
  ["friends.#(nets)#.first", ["Dale", "Roger", "Jane"]],
  ["friends.#(missing)#", []],
  ["friends.#( age >= 47 )#.first", ["Roger", "Jane"]],
  ["friends.#[last==\"Murphy\"].first", "Dale"],
  ["friends.#(last==Murphy).first", "Dale"],
  ["friends.#(first%\"?a*\")#.first", ["Dale", "Jane"]],
  ["friends.#(age!=47)#.age", [44, 68]],
  ["friends.#.nets.#", [3, 2, 2]],
  ["friends.#.nets.#(==\"tw\")#", [["tw"], ["tw"], ["tw"]]],
  ["friends.#(age==\"44\").first", "Dale"],
  ["children.#(==\"Alex\")#", ["Alex"]],
  ["children.#(>\"B\")#", ["Sara", "Jack"]],
  ["children.#(@this==\"Alex\")", NONE],
  ["friends.#(==\"Dale\")", NONE],
  ["name.#", NONE],
  ["name.*", "Tom"],
  ["*.first", "Tom"],
  ["friends.3", NONE],
  ["friends.01", {"first": "Roger", "last": "Craig", "age": 68, "nets": ["fb", "tw"]}],
  ["friends.-1", NONE],
  ["age.x", NONE],
  ["missing", NONE],
  ["name.", NONE],
  ["", NONE],
];

describe("gjson README and SYNTAX examples", () => {
  it.each(README_VECTORS)("%s", (path, want) => check(README_DOC, path, want));

  it("types results as gjson does", () => {
    const type = (path: string) => get(README_DOC, compilePath(path)).type;
    expect(type("name.last")).toBe("string");
    expect(type("age")).toBe("number");
    expect(type("children.#")).toBe("number");
    expect(type("children")).toBe("json");
    expect(type("name")).toBe("json");
    expect(type("missing")).toBeNull();
    expect(get({ a: null, t: true, f: false }, compilePath("a")).type).toBe("null");
    expect(get({ a: null, t: true, f: false }, compilePath("t")).type).toBe("true");
    expect(get({ a: null, t: true, f: false }, compilePath("f")).type).toBe("false");
  });
});

// Every vector of /work/shared/reference/kserve-and-seldon.md "gjson condition semantics",
// and the switch conditions of KServe's InferenceGraph e2e tests.
const KSERVE_VECTORS: Array<[condition: string, body: unknown, match: boolean]> = [
  ["[@this].#(source==client)", { source: "client" }, true],
  ["[@this].#(source==client)", { source: "client1", instances: [{ name: "x" }] }, false],
  ["instances.#(intval>10)", { instances: [{ intval: 0 }, { intval: 1 }] }, false],
  ["instances.#(strval%*red-server*)", { instances: [{ strval: "kserve" }, { strval: "1red-server1" }] }, true],
  ['instances.#(modelId=="2")', { instances: [{ modelId: "2" }] }, true],
  ['instances.#(modelId=="1")', { instances: [{ modelId: "2" }] }, false],
  ['predictions.#(label=="dog")', { predictions: [{ label: "dog", score: 0.9 }] }, true],
  ["[@this].#(decision_picker==ERROR)", { decision_picker: "ERROR", key1: { name: "abc" } }, true],
  ["[@this].#(decision_picker==SUCCESS)", { decision_picker: "SUCCESS", key1: { name: "abc" } }, true],
  ["[@this].#(decision_picker==SUCCESS)", { decision_picker: "NO_MATCH", key1: { name: "abc" } }, false],
  ["[@this].#(decision_picker==ERROR)", { decision_picker: "NO_MATCH", key1: { name: "abc" } }, false],
  ["foo", { foo: null }, true],
  ["foo", { foo: false }, true],
  ["foo", { foo: 0 }, true],
  ["foo", { foo: "" }, true],
  ["foo", { bar: 1 }, false],
  ["", { a: 1 }, false],
  ["", { "": 1 }, true],
  ["@this", { a: 1 }, true],
  ["@this", [], true],
  ["@this", null, true],
  ["@this", "text", true],
  ["@this", undefined, false],
  ["[@this].#(source==client)", undefined, false],
  ["instances.#(modelId==2)", { instances: [{ modelId: "2" }] }, true],
  ["instances.#(intval==\"1\")", { instances: [{ intval: 0 }, { intval: 1 }] }, true],
  ["#(source==client)", { source: "client" }, false], // queries iterate arrays only
];

describe("KServe condition vectors", () => {
  it.each(KSERVE_VECTORS)("%s on %j → %s", (condition, body, match) => {
    expect(exists(body, compilePath(condition))).toBe(match);
  });
});

// Comparisons are typed by the document value, never by how the literal is written.
const TYPED_DOC = {
  items: [
    { id: "a", v: "1" },
    { id: "b", v: 1 },
    { id: "c", v: 10 },
    { id: "d", v: "10" },
    { id: "e", v: true },
    { id: "f", v: false },
    { id: "g", v: null },
    { id: "h", v: "" },
    { id: "i", v: 0 },
    { id: "j", v: { k: 1 } },
    { id: "k", v: [1] },
    { id: "l" },
    { id: "m", v: "true" },
    { id: "n", v: "T" },
    { id: "o", v: "yes" },
    { id: "p", v: -2.5 },
    { id: "q", v: "Zebra" },
    { id: "r", v: "zebra" },
    { id: "s", v: "\uffff" },
    { id: "t", v: "\u{1F600}" },
  ],
};

const TYPED_VECTORS: Vector[] = [
  ["items.#(v==1)#.id", ["a", "b"]],
  ["items.#(v==\"1\")#.id", ["a", "b"]],
  ["items.#(v==10)#.id", ["c", "d"]],
  ["items.#(v==\"10\")#.id", ["c", "d"]],
  ["items.#(v==1e1)#.id", ["c"]],
  ["items.#(v==0x1p3)#.id", []],
  ["items.#(v==1_0)#.id", ["c"]],
  ["items.#(v>abc)#.id", ["b", "c", "m", "o", "r", "s", "t"]],
  ["items.#(v<0)#.id", ["h", "p"]],
  ["items.#(v==)#.id", ["h", "i"]],
  ["items.#(v==true)#.id", ["e", "i", "m"]],
  ["items.#(v==\"true\")#.id", ["e", "i", "m"]],
  ["items.#(v!=true)#.id", ["a", "b", "c", "d", "f", "h", "n", "o", "p", "q", "r", "s", "t"]],
  ["items.#(v==false)#.id", ["f", "i"]],
  ["items.#(v>false)#.id", ["b", "c", "e", "m", "o", "r", "s", "t"]],
  ["items.#(v<true)#.id", ["a", "d", "f", "h", "n", "p", "q"]],
  ["items.#(v==null)#.id", ["i"]],
  ["items.#(v)#.id", ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "n", "o", "p", "q", "r", "s", "t"]],
  ["items.#(v==~true)#.id", ["a", "b", "c", "e", "m", "n", "p"]],
  ["items.#(v==~false)#.id", ["f", "g", "i", "l"]],
  ["items.#(v==~null)#.id", ["g", "l"]],
  ["items.#(v==~*)#.id", ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "n", "o", "p", "q", "r", "s", "t"]],
  ["items.#(v!=~*)#.id", ["l"]],
  ["items.#(v%\"?ebra\")#.id", ["q", "r"]],
  ["items.#(v!%\"?ebra\")#.id", ["a", "d", "h", "m", "n", "o", "s", "t"]],
  ["items.#(v%\"1*\")#.id", ["a", "d"]],
  ["items.#(v>\"Z\")#.id", ["b", "c", "m", "o", "q", "r", "s", "t"]],
  ["items.#(v>\"\\uffff\")#.id", ["b", "c", "t"]],
  ["items.#(v<\"\\uffff\")#.id", ["a", "d", "h", "m", "n", "o", "p", "q", "r"]],
  ["items.#(v==inf)#.id", []],
  ["items.#(v>-Inf)#.id", ["a", "b", "c", "d", "i", "m", "n", "o", "p", "q", "r", "s", "t"]],
];

describe("typed comparisons", () => {
  it.each(TYPED_VECTORS)("%s", (path, want) => check(TYPED_DOC, path, want));
});

const OTHER_DOC = {
  wild: { a1: { x: 1 }, a2: { y: 2 }, a3: [{ k: 1 }, { k: 2 }], b: "s" },
  keys: JSON.parse(
    '{"a.b":1,"a*b":2,"a\\\\b":3,"@this":4,"!x":5,"#":6,"":7,"a|b":8,"a b":9,"__proto__":10,"x":{"":11}}',
  ) as unknown,
  nested: [[1, 2], [3], [], { "0": "obj" }],
  scalars: ["str", 5, true, false, null, "", 0],
};

// Wildcard keys, escapes, `#` on objects, nested arrays, arrays of scalars.
const OTHER_VECTORS: Vector[] = [
  ["wild.a*.x", 1],
  ["wild.a*.y", 2],
  ["wild.a*|y", NONE],
  ["wild.a*.#(k>1)#", [{"k": 2}]],
  ["wild.a*.#(k>1).k", 2],
  ["wild.a*.#(k>5).k", NONE],
  ["wild.?2.y", 2],
  ["keys.a\\.b", 1],
  ["keys.a\\*b", 2],
  ["keys.a*b", 1],
  ["keys.a\\\\b", 3],
  ["keys.\\@this", 4],
  ["keys.\\!x", 5],
  ["keys.#", 6],
  ["keys.\\#", 6],
  ["keys.", 7],
  ["keys.x.", 11],
  ["keys.a\\|b", 8],
  ["keys.a b", 9],
  ["keys.__proto__", 10],
  ["keys.toString", NONE],
  ["nested.0.1", 2],
  ["nested.#.0", [1, 3, "obj"]],
  ["nested.#(#>1)#", [[1, 2]]],
  ["nested.#(0==3)", [3]],
  ["nested.3.0", "obj"],
  ["scalars.#(==5)", 5],
  ["scalars.#(==\"str\")", "str"],
  ["scalars.#(==true)#", [true, 0]],
  ["scalars.#(==null)#", [0]],
  ["scalars.#(==)#", ["", 0]],
  ["scalars.#(@this==5)", NONE],
  ["scalars.#()#", ["str", 5, true, false, null, "", 0]],
];

describe("keys, wildcards, escapes, nested arrays", () => {
  it.each(OTHER_VECTORS)("%s", (path, want) => check(OTHER_DOC, path, want));

  it("builds multipath objects with gjson's key names", () => {
    const doc = { a: { b: 1 }, c: 2, "d.e": 3 };
    expect(get(doc, compilePath("{a.b,c,x:c,\"q r\":c,a|b,d\\.e,missing}")).value).toEqual({ b: 1, c: 2, x: 2, "q r": 2, "d\\.e": 3 });
    expect(get(doc, compilePath("{a.b,c.#(x)}")).value).toEqual({ b: 1 });
    expect(get(doc, compilePath("[a.b,x:c]")).value).toEqual([1, 2]);
    expect(get(doc, compilePath("{a.b,a.b}")).value).toEqual({ b: 1 });
  });

  it("does not reach prototype properties", () => {
    expect(exists({}, compilePath("toString"))).toBe(false);
    expect(exists({}, compilePath("constructor.name"))).toBe(false);
    expect(exists([], compilePath("length"))).toBe(false);
  });
});

// Malformed or unsupported paths fail at compile time, with the offset of the problem.
const ERROR_VECTORS: Array<[path: string, message: string, position: number]> = [
  ['friends.#(last=="Murphy"', "unclosed query", 8],
  ['friends.#(last=="Murphy".first', "unclosed query", 8],
  ["a.#(b==1]", "mismatched ']'", 8],
  ["a.#(b==1)x", "unexpected 'x' after a query", 9],
  ["a.#(b==1)#x", "unexpected 'x' after a query", 10],
  ["a.#(b==1)##", "unexpected '#' after a query", 10],
  ["a.#(b==\"x)", "unclosed string", 7],
  ["@pretty", "unsupported modifier @pretty", 0],
  ["a.@ugly", "unsupported modifier @ugly", 2],
  ["a|@keys", "unsupported modifier @keys", 2],
  ["@this:{}", "modifier arguments are not supported", 5],
  ["a.@", "missing modifier name", 2],
  ["!true", "literals", 0],
  ["a|!true", "literals", 2],
  ["..#", "JSON Lines", 0],
  ["a|..b", "JSON Lines", 2],
  ["a.[b,c]", "only supported at the start of a path", 2],
  ["a|{b}", "only supported at the start of a path", 2],
  ["[a,b", "unclosed multipath", 0],
  ["[a,b]x", "unexpected 'x' after a multipath", 5],
  ["[a,b)", "mismatched ')'", 4],
  ["a.#(b!c)", "expected an operator", 5],
  ["a.#(b!)", "expected an operator", 5],
  ['a.#(b=="x"y)', "unexpected characters after a quoted query value", 10],
  ['a.#(b=="x\\q")', "invalid escape", 7],
  ["a.#(b==~yes)", "unknown conversion '~yes'", 7],
  ['a.#(b=="~maybe")', "unknown conversion '~maybe'", 7],
  ["a\\", "dangling", 1],
  ["a.#.#(b|c)", "gjson would end the per-element path", 7],
  ["friends.#.nets.#|0", "gjson would end the per-element path", 16],
];

describe("compile errors", () => {
  it.each(ERROR_VECTORS)("%s", (path, message, position) => {
    let caught: unknown;
    try {
      compilePath(path);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(GjsonSyntaxError);
    const err = caught as GjsonSyntaxError;
    expect(err.message).toContain(message);
    expect(err.position).toBe(position);
  });

  it("accepts the empty path and keeps its source", () => {
    expect(compilePath("").source).toBe("");
    expect(compilePath("friends.#(age>45)#.last").source).toBe("friends.#(age>45)#.last");
  });
});
