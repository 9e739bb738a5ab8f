import { describe, expect, it } from "vitest";
import { canonicalHeaderName, compileHeaderPatterns, stepHeaders } from "../../src/core/upstream/propagate";

const patterns = (list: string[]) => {
  const compiled = compileHeaderPatterns(list);
  if (!compiled.ok) throw new Error(compiled.message);
  return compiled.regexes;
};
const incoming = new Headers({
  authorization: "Bearer sk-client",
  "x-b3-traceid": "t1",
  "x-switchyard-admin-token": "admin",
  "x-route-pin": "r1",
});

describe("stepHeaders", () => {
  it("sends what the patterns name, by canonical name, plus a JSON content type", () => {
    const out = stepHeaders(incoming, patterns(["X-B3-.*", "Authorization"]), false);
    expect(Object.fromEntries(out)).toEqual({ authorization: "Bearer sk-client", "content-type": "application/json", "x-b3-traceid": "t1" });
    expect(canonicalHeaderName("x-b3-traceid")).toBe("X-B3-Traceid");
  });

  it("holds back Authorization when it belongs to the router (client keys configured), whatever the patterns", () => {
    for (const list of [["Authorization"], ["Auth.*"], [".*"], ["A"]]) {
      const out = stepHeaders(incoming, patterns(list), true);
      expect(out.has("authorization"), list.join()).toBe(false);
    }
    expect(stepHeaders(incoming, patterns(["X-B3-.*"]), true).get("x-b3-traceid")).toBe("t1"); // the rest still goes
  });

  it("never sends the router's control headers, even to a catch-all pattern", () => {
    const out = stepHeaders(incoming, patterns([".*"]), false);
    expect(out.has("x-switchyard-admin-token")).toBe(false);
    expect(out.has("x-route-pin")).toBe(false);
  });
});
