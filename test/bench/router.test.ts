/** The quality bench's policy list handling (bench/quality/router.ts). */
import { describe, expect, it } from "vitest";
import { POLICIES, policyRejection, withoutStandIns } from "../../bench/quality/router";
import { POLICY_NAMES } from "../../src/core/picking/policies";

describe("policies", () => {
  it("runs every policy of the router's registry side by side", () => {
    expect([...POLICIES].sort()).toEqual([...POLICY_NAMES].sort());
  });

  it("the router's own loader accepts every registered policy and names the field when it refuses one", () => {
    for (const known of POLICY_NAMES) expect(policyRejection(known, { scrapeMs: 250 })).toBeNull();
    expect(policyRejection("no_such_policy", { scrapeMs: 250 })).toMatch(/^pools\.fleet\.policy: /);
  });

  it("a config problem other than the policy is the bench's bug, not a skip", () => {
    expect(() => policyRejection("weighted", { scrapeMs: 100 })).toThrow(/bench's router config is invalid.*scrape_ms/);
  });

  it("weighted stands in for random only while the router does not know random", () => {
    expect(withoutStandIns(POLICIES, () => true)).not.toContain("weighted");
    expect(withoutStandIns(POLICIES, (p) => p !== "random")).toContain("weighted");
    expect(withoutStandIns(["weighted", "least_loaded"], () => true)).toEqual(["weighted", "least_loaded"]);
  });
});
