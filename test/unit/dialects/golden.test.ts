/**
 * The golden table of translations both ways (cases.ts, golden.json): client dialect to
 * chat completions, and chat completions (whole, and streamed chunk by chunk) back to
 * the client's dialect. Each case must produce exactly what golden.json holds.
 */
import { describe, expect, it } from "vitest";
import { CASES } from "./cases";
import golden from "./golden.json";
import { translate } from "./translate";

const table = golden as Record<string, unknown>;

describe("dialect translations, golden table", () => {
  it("has a golden answer for every case, and no answer without a case", () => {
    expect(Object.keys(table).sort()).toEqual(CASES.map((c) => `${c.kind}: ${c.name}`).sort());
  });

  for (const c of CASES) {
    it(`${c.kind}: ${c.name}`, () => {
      expect(translate(c)).toEqual(table[`${c.kind}: ${c.name}`]);
    });
  }
});
