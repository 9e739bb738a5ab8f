/**
 * GJSON path evaluation (src/lib/gjson), the engine behind InferenceGraph conditions.
 * Every expected value in the vector tables below was produced by gjson itself (Go,
 * tidwall/gjson with v1.18's query semantics) on the same document and path, so these
 * tables pin "same answer as KServe", not our reading of the docs.
 */
import { describe, expect, it } from "vitest";
import { GjsonSyntaxError, compilePath, exists, get } from "../../src/lib/gjson";

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
  ["a.@", "missing modifier name", 2],
  ["..#", "JSON Lines", 0],
  ["a|..b", "JSON Lines", 2],
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

// Modifiers. Expected values from gjson's own tests (gjson_test.go at the 2024-09 head,
// v1.17.3+, which v1.18.0 was cut from; read from the copy vendored in
// unix-world/smartgo data-structs/tidwall/gjson/gjson-test.go.txt) and from SYNTAX.md.
describe("modifiers", () => {
  // SYNTAX.md "Modifiers": children.@reverse and children.@reverse.0 are in README_VECTORS.
  it("@pretty:{sortKeys} sorts every object's keys (SYNTAX.md, TestDeepModifierWithOptions)", () => {
    const sorted = get(README_DOC, compilePath('@pretty:{"sortKeys":true}')).value as Record<string, unknown>;
    expect(Object.keys(sorted)).toEqual(["age", "children", "fav.movie", "friends", "name"]);
    expect(sorted).toEqual(README_DOC);
    const deep = { x: [{ y: [{ z: { b: 1, c: 2, a: 3 } }] }] };
    const found = get(deep, compilePath('x.#.y.#.z.@pretty:{"sortKeys":true}')).value as Array<Array<Record<string, number>>>;
    expect(found).toEqual([[{ a: 3, b: 1, c: 2 }]]);
    expect(Object.keys(found[0]?.[0] ?? {})).toEqual(["a", "b", "c"]);
    // Without sortKeys (or with the text-only options) the value is unchanged.
    expect(Object.keys(get(README_DOC, compilePath('@pretty:{"indent":"\\t","width":40}')).value as object)).toEqual(Object.keys(README_DOC));
  });

  const FLAT = [1, [2], [3, 4], [5, [6, [7]]], { hi: "there" }, 8, [9]];
  const JOINS = [{ a: 1, b: 1 }, { b: 2 }, 5, { c: 3 }];
  const KEYED = { "1300014": { code: "1300014", price: 59.18 }, "1300015": { code: "1300015", price: 43.31 } };
  const MODIFIER_VECTORS: Array<[doc: unknown, path: string, want: unknown]> = [
    // TestFlatten, TestFlattenRemoveNonExist
    [FLAT, "@flatten", [1, 2, 3, 4, 5, [6, [7]], { hi: "there" }, 8, 9]],
    [FLAT, '@flatten:{"deep":true}', [1, 2, 3, 4, 5, 6, 7, { hi: "there" }, 8, 9]],
    [{ "9999": 1234 }, "@flatten", { "9999": 1234 }],
    [[[1], [2, [[], [3]], [4, [5], [], [[[6]]]]]], '@flatten:{"deep":true}', [1, 2, 3, 4, 5, 6]],
    // TestJoin (the preserve cases are rejected here, see compile errors)
    [[{}, {}], "@join", {}],
    [[{ a: 1 }, { b: 2 }], "@join", { a: 1, b: 2 }],
    [[{ a: 1, b: 1 }, { b: 2 }], "@join", { a: 1, b: 2 }],
    [JOINS, "@join", { a: 1, b: 2, c: 3 }],
    [JOINS, '@join:{"preserve":false}', { a: 1, b: 2, c: 3 }],
    [{ "9999": 1234 }, "@join", { "9999": 1234 }],
    // TestValid (an invalid body never reaches the evaluator: see "on nothing" below)
    [[{}], "@valid", [{}]],
    // TestKeysValuesModifier (its document, minus the trailing commas JSON.parse refuses)
    [KEYED, "@keys", ["1300014", "1300015"]],
    ["hello", "@keys", [null]],
    [[], "@keys", []],
    [[1, 2, 3], "@keys", [null, null, null]],
    [KEYED, "@values.#.code", ["1300014", "1300015"]],
    ["hello", "@values", ["hello"]],
    [[], "@values", []],
    [[1, 2, 3], "@values", [1, 2, 3]],
    // TestToFromStr
    [{ Message: '{"Records":[{"eventVersion":"2.1"}]}' }, "Message.@fromstr.Records.#.eventVersion.@tostr", ['"2.1"']],
    // TestGroup
    [{ id: ["123", "456", "789"], val: [2, 1] }, "@group", [{ id: "123", val: 2 }, { id: "456", val: 1 }, { id: "789" }]],
    [
      { issues: [{ fields: { labels: ["milestone_1", "group:foo", "plan:a", "plan:b"] }, id: "123" }, { fields: { labels: ["milestone_1", "group:foo", "plan:a", "plan"] }, id: "456" }] },
      '{"id":issues.#.id,"plans":issues.#.fields.labels.#(%"plan:*")#|#.#}|@group|#(plans>=2)#.id',
      ["123"],
    ],
    // TestSubpathsWithMultipaths and TestIssue301: `.@x` and `.[...]` after a key
    [[{ a: 1 }, { a: 2, values: ["a", "b", "c", "d", "e"] }, true, ["a", "b", "c", "d", "e"], 4], "1.values.@ugly", ["a", "b", "c", "d", "e"]],
    [[{ a: 1 }, { a: 2, values: ["a", "b", "c", "d", "e"] }, true, ["a", "b", "c", "d", "e"], 4], "1.values.[0,3]", ["a", "d"]],
    [[{ a: 1 }, { a: 2, values: ["a", "b", "c", "d", "e"] }, true, ["a", "b", "c", "d", "e"], 4], "3.[0,3]", ["a", "d"]],
    [[{ a: 1 }, true, 4], "#.@ugly", [{ a: 1 }, true, 4]],
    [[{ a: 1 }, { a: 2, values: ["a", "b", "c", "d", "e"] }, true, ["a", "b", "c", "d", "e"], 4], "#.[0,3]", [[], [], [], ["a", "d"], []]],
    [{ children: ["Sara", "Alex", "Jack"], "fav.movie": ["Deer Hunter"] }, "children.[0]", ["Sara"]],
    [{ children: ["Sara", "Alex", "Jack"], "fav.movie": ["Deer Hunter"] }, "children.[10]", []],
    [{ children: ["Sara", "Alex", "Jack"], "fav.movie": ["Deer Hunter"] }, "fav\\.movie.[0]", ["Deer Hunter"]],
    [{ children: ["Sara", "Alex", "Jack"], "fav.movie": ["Deer Hunter"] }, "fav\\.movie.[1]", []],
    [{ children: ["Sara", "Alex", "Jack"], "fav.movie": ["Deer Hunter"] }, "fav\\.movie.1", NONE],
    // TestPipeDotMixing
    [{ info: { friends: README_DOC.friends } }, '@ugly|info|friends|#[first="Dale"]|last', "Murphy"],
    [{ info: { friends: README_DOC.friends } }, '@ugly|info.@ugly|friends|#[first="Dale"]|last', "Murphy"],
    [{ info: { friends: README_DOC.friends } }, '@ugly.info|@ugly.friends|#[first="Dale"]|last', "Murphy"],
    // @this and @reverse on objects, chained with `.` and `|`
    [{ a: 1, b: 2 }, "@reverse", { b: 2, a: 1 }],
    [{ a: 1, b: 2 }, "@reverse|@keys", ["b", "a"]],
    [README_DOC, "name.@reverse.@keys.0", "last"],
    [README_DOC, "friends.#.nets.@reverse", [["tw", "fb", "ig"], ["tw", "fb"], ["tw", "ig"]]],
    [README_DOC, "friends|@reverse|#.first", ["Jane", "Roger", "Dale"]],
    [README_DOC, "{first:name.first,n:age}|@values", ["Tom", 37]],
    [README_DOC, "age|@tostr", "37"],
    [README_DOC, "age|@tostr|@fromstr", 37],
    [README_DOC, "name|@tostr|@fromstr.last", "Anderson"],
  ];

  it.each(MODIFIER_VECTORS)("%j %s", (doc, path, want) => check(doc, path, want));

  it("@dig looks for a path at every depth (TestModDig)", () => {
    const issues = {
      group: {
        issues: [
          { fields: { labels: ["milestone_1", "group:foo", "plan:a", "plan:b"] }, refid: "123" },
          { fields: { labels: ["milestone_2", "group:foo", "plan:a", "plan"] }, refid: "456" },
          [{ extra_deep: [{ fields: { labels: ["milestone_3", "group:foo", "plan:a", "plan"] }, refid: "789" }] }],
        ],
      },
    };
    check(issues, "group.@dig:#(refid=123)|0.fields.labels.0", "milestone_1");
    check(issues, "group.@dig:#(refid=456)|0.fields.labels.0", "milestone_2");
    check(issues, "group.@dig:#(refid=789)|0.fields.labels.0", "milestone_3");
    const secrets = { something: { anything: { abcdefg: { finally: { important: { secret: "password", name: "jake" } }, name: "melinda" } } } };
    check(secrets, "@dig:name", ["melinda", "jake"]);
    check(secrets, "@dig:secret", ["password"]);
    check(secrets, "@dig:nothing", []);
  });

  it("@fromstr reads a string's text as gjson's Parse does", () => {
    const doc = { ok: '{"a":[1,2]}', word: "hello", num: "123abc", t: "true love", blank: "   ", nil: null };
    check(doc, "ok|@fromstr.a.1", 2);
    check(doc, "word|@fromstr", NONE); // Parse("hello") is nothing
    check(doc, "nil|@fromstr", NONE); // null's String() is empty
    check(doc, "blank|@fromstr", NONE);
    check(doc, "t|@fromstr", true); // tolit reads "true"
    // "123abc": gjson's Number with Raw "123abc" and Num 0 (ParseFloat fails).
    expect(get(doc, compilePath("num|@fromstr"))).toEqual({ exists: true, type: "number", value: 0, raw: "123abc" });
    expect(exists(doc, compilePath("num|@fromstr|@valid"))).toBe(false); // Raw is not valid JSON
    expect(get(doc, compilePath("num|@fromstr|@tostr")).value).toBe("123abc"); // @tostr quotes the raw text
    expect(exists({ items: [doc] }, compilePath("items.#(num|@fromstr==0)"))).toBe(true);
  });
});

// Literals: TestStaticJSON (gjson_test.go, as above), plus SYNTAX.md "Literals".
describe("literals", () => {
  const NAME_DOC = { name: { first: "Tom", last: "Anderson" } };
  const LITERAL_VECTORS: Array<[path: string, want: unknown]> = [
    ['"bar"', NONE],
    ['!"bar"', "bar"],
    ['!{"name":{"first":"Tom"}}.{name.first}.first', "Tom"],
    ['{name.last,"foo":!"bar"}', { last: "Anderson", foo: "bar" }],
    ['{name.last,"foo":!{"a":"b"},"that"}', { last: "Anderson", foo: { a: "b" } }],
    ['{name.last,"foo":!{"c":"d"},!"that"}', { last: "Anderson", foo: { c: "d" }, _: "that" }],
    // TestStaticJSON's array minus !inf, !nan (rejected here) and !hello (a key there, rejected here)
    ['[!true,!false,!null,{"name":!"andy",name.last},+inf,!["any","thing"]]', [true, false, null, { name: "andy", last: "Anderson" }, ["any", "thing"]]],
    ["!true", true],
    ["!false", false],
    ["!null", null],
    ["!123", 123],
    ["!-1.5e3", -1500],
    ["!+5", 5],
    ["![1,2]|#", 2],
    ["!true|@tostr", "true"],
    ["name.!first", NONE], // after `.` gjson reads `!first` as a key
    ["name|!true", true],
  ];
  it.each(LITERAL_VECTORS)("%s", (path, want) => check(NAME_DOC, path, want));

  it("start every path run per element", () => {
    check(README_DOC, "friends.#.!1", [1, 1, 1]);
    check(README_DOC, 'friends.#(age>45)#.!"x"|#', 2);
    check(README_DOC, 'friends.#(age>45)#.!"x"', ["x", "x"]);
  });

  it("exist even on an empty body (gjson's Get on empty text)", () => {
    expect(exists(undefined, compilePath("!true"))).toBe(true);
    expect(exists(undefined, compilePath("!null"))).toBe(true);
    expect(exists(undefined, compilePath("@this"))).toBe(false);
  });
});

// After `|` (or a `.` before @, [ or {) gjson still runs the rest of the path when
// nothing was found, once its scan reached the container the last key is looked up in:
// Get("", "@keys") is `[]` (TestKeysValuesModifier) and the pipe is registered as
// parseObject/parseArray start on their part of the path (gjson.go, Get and
// parseObjectPath/parseArrayPath). Only @keys, @values, @tostr, @dig, literals and
// multipaths yield something on nothing.
const ON_NOTHING_VECTORS: Vector[] = [
  ["missing|@keys", []],
  ["missing.@keys", []],
  ["missing|@values", []],
  ["missing|@tostr", ""],
  ["missing|!true", true],
  ["missing.[age]", []],
  ["missing|{age}", {}],
  ["missing|@reverse", NONE],
  ["missing|@this", NONE],
  ["missing|@valid", NONE],
  ["missing|@dig:age", []],
  ["missing.x|@keys", NONE], // `missing` failed first: the `|` was never reached
  ["age.x|@keys", NONE], // 37 has no children to look in
  ["age|@keys", [null]],
  ["name.middle|@tostr", ""],
  ["children.5|@keys", []],
  ["children.x.y|@keys", NONE],
  ['friends.#(last=="Nobody")|@keys', []],
  ['friends.#(last=="Nobody").first|@keys', NONE], // no match: the `|` after `.first` is never reached
  ['friends.#(last=="Murphy").middle|@keys', []], // a match: it is
  ["friends.#(age>100)#.first|@tostr", []], // no match: `[]`, the `|@tostr` is dropped
  ["friends.#(age>45)#.first|@tostr", '["Roger","Jane"]'],
  ['name.#(x=="y")|@keys', []], // on an object the query is a key: gjson still reaches the `|`
  ['name.#(x=="y").z|@keys', NONE],
  ['name.#(x=="y").@keys', []], // `.@keys` after it reads as `|@keys`
  ["name.#.@keys", []], // `#` is a key on an object; `.@keys` still runs
  ["name.#.x|@keys", NONE],
  ["nam*.middle|@keys", []],
  ["x*.middle|@keys", NONE],
];

describe("modifiers and literals after nothing was found", () => {
  it.each(ON_NOTHING_VECTORS)("%s", (path, want) => check(README_DOC, path, want));
});

// `<=` on each type, from gjson_test.go TestQueries; these also catch `<=` turned into
// `<` anywhere in compare.ts.
describe("<= comparisons (TestQueries)", () => {
  const QUERIES_DOC = {
    info: {
      friends: [
        { first: "Dale", last: "Murphy", kind: "Person", cust1: true, extra: [10, 20, 30], details: { city: "Tempe", state: "Arizona" } },
        { first: "Roger", last: "Craig", kind: "Person", cust2: false, extra: [40, 50, 60], details: { city: "Phoenix", state: "Arizona" } },
      ],
    },
  };
  const VECTORS: Vector[] = [
    ["i*.f*.#[extra.0<11].first", "Dale"],
    ["i*.f*.#[extra.0<=11].first", "Dale"],
    ["i*.f*.#[extra.0<10].first", NONE],
    ["i*.f*.#[extra.0<=10].first", "Dale"],
    ["i*.f*.#[extra.0<=10]#.first", ["Dale"]],
    ['i*.f*.#[first<"Dale"].last', NONE],
    ['i*.f*.#[first<="Dale"].last', "Murphy"],
    ['i*.f*.#[first<="Dale"]#.last', ["Murphy"]],
    ["i*.f*.#[cust2<false].first", NONE],
    ["i*.f*.#[cust2<=false].first", "Roger"],
    ["i*.f*.#[cust1<=true].first", NONE],
  ];
  it.each(VECTORS)("%s", (path, want) => check(QUERIES_DOC, path, want));
});

// Rejected at config load: what gjson itself does not have, what it would read in a way
// that silently differs from the intent, and what this evaluator cannot reproduce.
const REJECTED_VECTORS: Array<[path: string, message: string, position: number]> = [
  ["@prettty", "unknown modifier @prettty", 0],
  ["a|@case:upper", "unknown modifier @case", 2],
  ["@this:{}", "@this takes no argument", 6],
  ["a|@reverse:x.0", "@reverse takes no argument", 11],
  ["@flatten:deep", "@flatten takes a JSON object", 9],
  ['@flatten:{"deap":true}', "@flatten has no option 'deap'", 9],
  ['@flatten:{"deep":1}', "option 'deep' takes a boolean", 9],
  ["@join:true", "@join takes a JSON object", 6],
  ['@join:{"preserve":true}', "duplicate keys cannot be represented", 0],
  ["@dig", "@dig needs a path", 0],
  ["@dig:", "@dig needs a path", 0],
  ['@pretty:{"indent":"  "}x', "unexpected 'x' after a modifier argument", 23],
  ['@pretty:{"sortKeys":true', "unclosed modifier argument", 8],
  ["!TRUE", "literal '!TRUE' is not supported", 0],
  ["!Null", "literal '!Null' is not supported", 0],
  ["!nan", "literal '!nan' is not supported", 0],
  ["a|!inf", "literal '!inf' is not supported", 2],
  ["!hello", "unknown literal '!hello'", 0],
  ['!"a"|b', "a string literal must end the path", 4],
  ['!"a)"', "cut short by gjson", 0],
  ['!"\\ud800"', "unpaired", 0],
  ["!5|x", "not a plain number", 0],
  ["!1_0", "not a plain number", 0],
  ['!{"a":1}x', "unexpected 'x' after a literal", 8],
  ['!{"a":1', "unclosed literal", 0],
  ["!{a:1}", "not valid JSON", 0],
  ["a.#(b|@keys:x)", "inside a query", 5],
  ["a.#(b.@dig:c==1)", "inside a query", 5],
  ["a.#(b|!true.c)", "inside a query", 5],
];

describe("rejected modifiers and literals", () => {
  it.each(REJECTED_VECTORS)("%s", (path, message, position) => {
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
});
