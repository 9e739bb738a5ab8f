/**
 * Reads a body of at most `limit` bytes: null once it passes the limit, declared
 * (`Content-Length`) or counted as it arrives, and the rest is never read. Everything
 * the router reads from outside (client bodies, replica metrics, usage APIs) goes
 * through here, so none of them can make it hold an unbounded body. A stream that breaks
 * off throws, as the stream does; callers word that in their own terms.
 */
export async function readUpTo(body: ReadableStream<Uint8Array> | null, declaredLength: string | null, limit: number): Promise<Uint8Array | null> {
  const declared = Number(declaredLength ?? NaN);
  if (!body) return new Uint8Array();
  if (Number.isFinite(declared) && declared > limit) {
    await body.cancel().catch(() => {});
    return null;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return joinChunks(chunks, size);
}

/** `chunks` as one array of `size` bytes (their total), without a copy when there is one. */
export function joinChunks(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * A body read whole when it ends within `limit` bytes; past that, the same bytes as a
 * stream (those read so far, then the rest), so nothing is lost and nothing more is held.
 * A stream that breaks off while it is read throws, as `readUpTo` does.
 */
export async function readWithin(body: ReadableStream<Uint8Array>, limit: number): Promise<{ whole: Uint8Array } | { stream: ReadableStream<Uint8Array> }> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { whole: joinChunks(chunks, size) };
    chunks.push(value);
    size += value.byteLength;
    if (size > limit) break;
  }
  let next = 0;
  return {
    stream: new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (next < chunks.length) {
          controller.enqueue(chunks[next]!);
          chunks[next++] = EMPTY; // handed on: not held twice
          return;
        }
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    }),
  };
}

const EMPTY = new Uint8Array();
