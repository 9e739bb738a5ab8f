/** readWithin: a body held whole when it ends within the limit, else handed on as the same bytes, none lost. */
import { describe, expect, it } from "vitest";
import { readWithin } from "../../src/lib/bounded-read";

const streamOf = (chunks: Uint8Array[], breakAfter = Infinity) => {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i >= breakAfter) return controller.error(new Error("broke off"));
      if (i < chunks.length) controller.enqueue(chunks[i++]!);
      else controller.close();
    },
  });
};
const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);

describe("readWithin", () => {
  it("holds a body that ends within the limit whole", async () => {
    const read = await readWithin(streamOf([bytes(3, 1), bytes(4, 2)]), 10);
    expect("whole" in read && [...read.whole]).toEqual([1, 1, 1, 2, 2, 2, 2]);
  });

  it("hands a larger one on as a stream of every byte, those read and the rest", async () => {
    const chunks = [bytes(6, 1), bytes(6, 2), bytes(6, 3)];
    const read = await readWithin(streamOf(chunks), 10);
    expect("stream" in read).toBe(true);
    if (!("stream" in read)) return;
    const all = new Uint8Array(await new Response(read.stream).arrayBuffer());
    expect([...all]).toEqual([...chunks[0]!, ...chunks[1]!, ...chunks[2]!]);
  });

  it("throws when the body breaks off before its end or the limit", async () => {
    await expect(readWithin(streamOf([bytes(2, 1), bytes(2, 2)], 1), 10)).rejects.toThrow("broke off");
  });
});
