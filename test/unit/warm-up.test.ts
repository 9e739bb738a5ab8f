/**
 * The isolate's start-up run of the config path (src/platform/warm-up.ts) only helps
 * while its placeholder documents are valid configs of today's schema: a document the
 * schema refuses stops at its first error and warms almost nothing. So each one must load,
 * in the native form and in seed 004's, and reach the snapshot.
 */
import { describe, expect, it } from "vitest";
import { loadDocuments } from "../../src/core/config/documents";
import { WARM_UP_DOCUMENTS, warmUpConfigPath } from "../../src/platform/warm-up";

describe("config warm-up at isolate start", () => {
  it("every placeholder document is a valid config", () => {
    for (const document of WARM_UP_DOCUMENTS) {
      const result = loadDocuments([document], {});
      expect(result.ok ? [] : result.errors).toEqual([]);
    }
  });

  it("covers the shapes users load: scoring and weighted pools, a graph, RouteWise, seed 004", () => {
    const configs = WARM_UP_DOCUMENTS.map((d) => loadDocuments([d], {})).flatMap((r) => (r.ok ? [r.config] : []));
    const native = configs[0]!;
    expect(Object.values(native.pools).map((p) => p.policy).sort()).toEqual(["switchyard", "weighted"]);
    expect(Object.keys(native.graphs)).toHaveLength(1);
    expect(Object.values(native.models).some((m) => m.router === "routewise")).toBe(true);
    expect(Object.keys(configs[1]!.models)).toEqual(["m"]); // seed 004's deployments, converted
  });

  it("reports success, and never throws", () => {
    expect(warmUpConfigPath()).toBe(true);
  });
});
