import { describe, expect, it } from "vitest";
import { cryptoRandom, uniformFloat, uniformInt } from "../../src/lib/random";
import { scripted } from "../support/scripted-random";

describe("uniformInt", () => {
  it("rejects draws from the partial block at the top of 2^32 instead of folding them (no modulo bias)", () => {
    // 2^32 % 3 == 1, so the single value 2^32-1 would make 0 more likely if folded.
    const source = scripted([2 ** 32 - 1, 7]);
    expect(uniformInt(source, 3)).toBe(7 % 3);
    expect(source.used).toBe(2);
  });

  it("accepts the largest draw below the limit", () => {
    const source = scripted([2 ** 32 - 2]);
    expect(uniformInt(source, 3)).toBe((2 ** 32 - 2) % 3);
    expect(source.used).toBe(1);
  });

  it("never rejects when n divides 2^32", () => {
    const source = scripted([2 ** 32 - 1]);
    expect(uniformInt(source, 256)).toBe(255);
  });

  it("refuses an empty or fractional range", () => {
    expect(() => uniformInt(scripted([1]), 0)).toThrow(RangeError);
    expect(() => uniformInt(scripted([1]), 2.5)).toThrow(RangeError);
  });
});

describe("uniformFloat", () => {
  it("spans [0, 1) from 53 bits", () => {
    expect(uniformFloat(scripted([0, 0]))).toBe(0);
    const top = uniformFloat(scripted([2 ** 32 - 1, 2 ** 32 - 1]));
    expect(top).toBeLessThan(1);
    expect(top).toBe(1 - 2 ** -53);
  });
});

describe("cryptoRandom", () => {
  it("draws from Web Crypto across buffer refills without repeating the buffer", () => {
    const source = cryptoRandom();
    const draws = Array.from({ length: 200 }, () => source.uint32());
    expect(new Set(draws).size).toBeGreaterThan(190); // 200 uniform 32-bit draws collide with probability ~5e-6
    for (const d of draws) expect(Number.isInteger(d) && d >= 0 && d < 2 ** 32).toBe(true);
  });
});
