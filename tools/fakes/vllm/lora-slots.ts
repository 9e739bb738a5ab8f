/**
 * Which LoRA adapters are loaded on the replica's GPU. At most `max` at once (vLLM's
 * --max-loras). An adapter with running requests stays; when a request needs one that
 * is not loaded and every slot is taken, the least recently used adapter without running
 * requests is evicted. If every loaded adapter is busy, the request waits.
 *
 * Loading takes `loadMs`; requests that start on an adapter still loading wait for the
 * same load rather than paying again. (vLLM loads inside the engine step, which stalls
 * the whole batch; the fake charges the load to the requests on that adapter only.)
 */
export class LoraSlots {
  /** Least recently used first. */
  private readonly loaded = new Map<string, { running: number; readyAt: number }>();
  loads = 0;
  evictions = 0;

  constructor(private readonly max: number) {}

  canStart(name: string): boolean {
    if (this.loaded.has(name) || this.loaded.size < this.max) return true;
    for (const a of this.loaded.values()) if (a.running === 0) return true;
    return false;
  }

  /** Starts a request on `name` (canStart must hold); resolves when the adapter is ready (epoch ms). */
  start(name: string, now: number, loadMs: number): { readyAt: number; loaded: boolean } {
    let adapter = this.loaded.get(name);
    const load = adapter === undefined;
    if (adapter === undefined) {
      if (this.loaded.size >= this.max) this.evictIdle();
      adapter = { running: 0, readyAt: now + loadMs };
      this.loads++;
    }
    this.loaded.delete(name); // re-inserted last: most recently used
    adapter.running++;
    this.loaded.set(name, adapter);
    return { readyAt: adapter.readyAt, loaded: load };
  }

  finish(name: string): void {
    const adapter = this.loaded.get(name);
    if (!adapter) return;
    adapter.running--;
    this.loaded.delete(name);
    this.loaded.set(name, adapter);
  }

  /** Loaded adapters, least recently used first. */
  names(): string[] {
    return [...this.loaded.keys()];
  }

  private evictIdle(): void {
    for (const [name, a] of this.loaded) {
      if (a.running === 0) {
        this.loaded.delete(name);
        this.evictions++;
        return;
      }
    }
    throw new Error("LoRA slots: no idle adapter to evict (canStart was not checked)");
  }
}
