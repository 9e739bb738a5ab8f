import type { ChatToolCallDelta } from "./chat";

/**
 * Which call a streamed tool-call piece belongs to. By its `index`, as the spec has it.
 * An upstream that leaves `index` out (some do) is read as the OpenAI SDK would read
 * ids: a piece naming another call's id than the last one starts a new call, so two calls
 * are not run together into one name and one unparsable argument string.
 */
export class ToolPieces {
  readonly #ids = new Map<number, string>();
  #last = -1;

  indexOf(piece: ChatToolCallDelta, position: number): number {
    const id = typeof piece.id === "string" && piece.id !== "" ? piece.id : undefined;
    let index: number;
    if (typeof piece.index === "number") index = piece.index;
    else if (this.#last < 0) index = position;
    else if (id !== undefined && this.#ids.has(this.#last) && this.#ids.get(this.#last) !== id) index = Math.max(...this.#ids.keys(), this.#last) + 1;
    else index = this.#last + position;
    if (id !== undefined && !this.#ids.has(index)) this.#ids.set(index, id);
    this.#last = index;
    return index;
  }
}

/** A call's name from its pieces: the latest one a piece gives, as the OpenAI SDK's stream accumulator does (some upstreams repeat it in every piece). */
export function nameFrom(current: string, piece: ChatToolCallDelta): string {
  const name = piece.function?.name;
  return typeof name === "string" && name !== "" ? name : current;
}
