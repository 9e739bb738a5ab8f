import { describe, expect, it } from "vitest";
import { PrefixLog } from "../../src/core/pool/prefix-log";

describe("PrefixLog", () => {
  it("hands an isolate the other isolates' inserts past its cursor, oldest first", () => {
    const log = new PrefixLog();
    log.append("i1", [{ replica: "a", hashes: [1, 2] }]);
    log.append("i2", [{ replica: "b", hashes: [3] }]);
    log.append("i1", [{ replica: "a", hashes: [4] }]);
    expect(log.since(0, "i2")).toEqual({ cursor: 3, inserts: [{ replica: "a", hashes: [1, 2] }, { replica: "a", hashes: [4] }] });
    expect(log.since(1, "i2")).toEqual({ cursor: 3, inserts: [{ replica: "a", hashes: [4] }] });
    expect(log.since(0, "i1")).toEqual({ cursor: 3, inserts: [{ replica: "b", hashes: [3] }] });
    expect(log.since(3, "i1")).toEqual({ cursor: 3, inserts: [] });
  });

  it("keeps at most maxHashes, dropping the oldest entries", () => {
    const log = new PrefixLog(5, 100);
    log.append("i1", [{ replica: "a", hashes: [1, 2, 3] }]);
    log.append("i1", [{ replica: "a", hashes: [4, 5, 6] }]);
    expect(log.hashes).toBe(3);
    expect(log.since(0, "other").inserts).toEqual([{ replica: "a", hashes: [4, 5, 6] }]);
  });

  it("caps one answer at syncMaxHashes, keeping the newest", () => {
    const log = new PrefixLog(100, 4);
    log.append("i1", [{ replica: "a", hashes: [1, 2, 3] }, { replica: "b", hashes: [4, 5] }, { replica: "c", hashes: [6, 7] }]);
    expect(log.since(0, "other")).toEqual({ cursor: 3, inserts: [{ replica: "b", hashes: [4, 5] }, { replica: "c", hashes: [6, 7] }] });
  });

  it("forgets a replica that left", () => {
    const log = new PrefixLog();
    log.append("i1", [{ replica: "a", hashes: [1] }, { replica: "b", hashes: [2, 3] }]);
    log.dropReplica("b");
    expect(log.hashes).toBe(1);
    expect(log.since(0, "other").inserts).toEqual([{ replica: "a", hashes: [1] }]);
  });
});
