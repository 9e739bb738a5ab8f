import { joinChunks } from "../../lib/bounded-read";

/**
 * An error answer's body with a plan's `scrubError` applied (the config's secrets shown
 * as `${VAR}`), whatever its length is declared as: an upstream that echoes the key it
 * was sent answers in a few hundred bytes, chunked as often as not. Bodies past
 * MAX_SCRUBBED_BYTES pass as they came: no error message is that long, and holding one
 * would be holding whatever an upstream chose to send.
 */
export const MAX_SCRUBBED_BYTES = 1024 * 1024;

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export function scrubbed(body: ArrayBuffer | ReadableStream<Uint8Array> | null, rewrite: (text: string) => string): ArrayBuffer | Uint8Array | ReadableStream<Uint8Array> | null {
  if (body === null) return null;
  if (body instanceof ArrayBuffer) return body.byteLength > MAX_SCRUBBED_BYTES ? body : scrubBytes(new Uint8Array(body), rewrite);
  const held: Uint8Array[] = [];
  let size = 0;
  let passing = false;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (passing) return controller.enqueue(chunk);
        held.push(chunk);
        size += chunk.byteLength;
        if (size <= MAX_SCRUBBED_BYTES) return;
        passing = true;
        for (const part of held.splice(0)) controller.enqueue(part);
      },
      flush(controller) {
        if (passing || size === 0) return;
        controller.enqueue(scrubBytes(joinChunks(held, size), rewrite));
      },
    }),
  );
}

/** The bytes with their secrets shown as `${VAR}`; the same bytes, not a copy, when they held none. */
function scrubBytes(bytes: Uint8Array, rewrite: (text: string) => string): Uint8Array {
  const text = decoder.decode(bytes);
  const shown = rewrite(text);
  return shown === text ? bytes : encoder.encode(shown);
}
