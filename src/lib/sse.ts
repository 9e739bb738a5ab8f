/**
 * Server-sent events (the WHATWG event-stream format), both ways: a reader that takes
 * text as it arrives in arbitrary pieces and gives back whole events, and the one-line
 * writer. Comments (`:`-lines) and `id`/`retry` fields are read past: nothing here uses
 * them.
 */

export interface SseEvent {
  /** The `event:` field; null when the event named none. */
  event: string | null;
  /** The `data:` lines joined with "\n". */
  data: string;
}

export class SseReader {
  #pending = "";
  #event: string | null = null;
  #data: string[] = [];

  /** The events that `text` completes, in order. */
  push(text: string): SseEvent[] {
    this.#pending += text;
    const out: SseEvent[] = [];
    for (;;) {
      const at = this.#pending.search(/\r\n|\r|\n/);
      if (at < 0) break;
      // A lone "\r" at the end may be the first half of "\r\n": wait for the next piece.
      if (this.#pending[at] === "\r" && at === this.#pending.length - 1) break;
      const line = this.#pending.slice(0, at);
      this.#pending = this.#pending.slice(at + (this.#pending.startsWith("\r\n", at) ? 2 : 1));
      this.#line(line, out);
    }
    return out;
  }

  /** The last event when the stream ends without its blank line. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    if (this.#pending !== "") this.#line(this.#pending, out);
    this.#pending = "";
    this.#line("", out);
    return out;
  }

  #line(line: string, out: SseEvent[]): void {
    if (line === "") {
      if (this.#data.length > 0) out.push({ event: this.#event, data: this.#data.join("\n") });
      this.#event = null;
      this.#data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.#data.push(value);
    else if (field === "event") this.#event = value;
  }
}

/** One event as written on the wire, its blank line included. */
export function sseEvent(event: string | null, data: unknown): string {
  const json = typeof data === "string" ? data : JSON.stringify(data);
  return `${event === null ? "" : `event: ${event}\n`}data: ${json}\n\n`;
}
