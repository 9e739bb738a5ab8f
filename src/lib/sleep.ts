/** Waits `ms`, or less if `signal` fires first, or `sooner` settles first. */
export function sleep(ms: number, signal: AbortSignal | undefined, sooner?: Promise<unknown>): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done);
    sooner?.then(done, done);
  });
}
