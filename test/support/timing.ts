/**
 * Bounded waits for tests on a loaded machine. An await on a stream or a timer that
 * never settles would otherwise hang until the test's own timeout and fail with a
 * message that names neither what was awaited nor why; these fail with one that does.
 * The bounds are generous on purpose: they catch a hang, not a slow machine.
 */

/** What a bounded wait throws when its bound passes: a hang, never a stream's own error. */
export class WaitTimeout extends Error {
  override name = "WaitTimeout";
}

/** `promise`, or a WaitTimeout naming `what` if it has not settled within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeout(`${what}: nothing within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** One `reader.read()`: a chunk, the end, or the stream's error, within `ms`. */
export function readWithin<T>(reader: ReadableStreamDefaultReader<T>, ms: number, what: string): Promise<ReadableStreamReadResult<T>> {
  return within(reader.read(), ms, `${what} (no chunk, no end and no error)`);
}

/** How a body read to its end went: the text received, and the stream's error if it broke. */
export async function readToEnd(res: Response, ms: number, what: string): Promise<{ text: string; error?: unknown }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await readWithin(reader, ms, what);
      if (done) return { text };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    if (error instanceof WaitTimeout) throw error; // a hang is a failure, not a broken stream
    return { text, error };
  }
}
