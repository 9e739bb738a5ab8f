import { sleep } from "../../lib/sleep";

/**
 * Prompts being prefilled, per replica: a streamed request that sends a prompt's opening
 * to a replica that does not hold it yet "warms" it until its first chunk comes (the
 * engine has then cached the prompt) or it ends. Another request for the same opening
 * routed to that replica meanwhile waits for that, at most PREFILL_WAIT_MAX_MS, and then
 * finds the prompt cached, instead of prefilling the same prompt beside it (a burst of
 * one new system prompt: every request of its first wave missed). Pure bookkeeping of
 * one isolate; its waiters are counted in the replica's load all along (their lease).
 */
export const PREFILL_WAIT_MAX_MS = 1_000; // a prefill slower than this is not worth waiting for: the waiter prefills its own

interface Warming {
  ready: Promise<void>;
  open: () => void;
}

export class PrefillGate {
  readonly #warming = new Map<string, Warming>();

  /** The wait for `opening` on `replica`, when another request is prefilling it there. */
  warming(replica: string, opening: number): Promise<void> | null {
    return this.#warming.get(key(replica, opening))?.ready ?? null;
  }

  /** This request prefills `opening` on `replica`: the returned function (idempotent) lets its waiters go. */
  warm(replica: string, opening: number): () => void {
    const k = key(replica, opening);
    let open!: () => void;
    const ready = new Promise<void>((resolve) => (open = resolve));
    const entry = { ready, open };
    this.#warming.set(k, entry);
    return () => {
      entry.open();
      if (this.#warming.get(k) === entry) this.#warming.delete(k);
    };
  }

  /** For tests and views. */
  get size(): number {
    return this.#warming.size;
  }
}

const key = (replica: string, opening: number): string => `${replica}\u0000${opening}`;

/** Waits for `ready`, at most `ms`, or until `signal` fires. */
export function waitForPrefill(ready: Promise<void>, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return sleep(ms, signal, ready);
}
