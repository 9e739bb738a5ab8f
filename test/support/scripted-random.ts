import type { RandomSource } from "../../src/lib/random";

/** A RandomSource that replays fixed draws and counts how many were used. */
export function scripted(values: number[]): RandomSource & { used: number } {
  const source = {
    used: 0,
    uint32() {
      if (source.used >= values.length) throw new Error("scripted random source ran out");
      return values[source.used++]!;
    },
  };
  return source;
}
