/**
 * CPU time of the process serving a bench row, from Linux's /proc: the one measure of a
 * row's own cost that other work on the machine hardly moves (req/s follows whatever
 * else runs on the 2 cores; CPU per request follows the code). Elsewhere than Linux the
 * numbers are NaN and the column says n/a.
 */
import { readFileSync, readdirSync } from "node:fs";

const USER_HZ = 100; // clock ticks per second in /proc/<pid>/stat on Linux

/** utime + stime of `pid` in ms (10 ms resolution), or NaN when it cannot be read. */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // fields from the 3rd on; comm may hold blanks
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

/** Pids of this process's children named `workerd` (Miniflare starts one per Worker). */
export function workerdChildren(): Set<number> {
  const out = new Set<number>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (name.startsWith("workerd") && parent === process.pid) out.add(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * Starts a Worker and finds its workerd: the one child that was not there before. Starts
 * must not overlap for this to name the right one, so the bench starts Workers one by one.
 */
export async function withWorkerdPid<T>(start: () => Promise<T>): Promise<T & { pid: number | undefined }> {
  const before = workerdChildren();
  const started = await start();
  const fresh = [...workerdChildren()].filter((pid) => !before.has(pid));
  return Object.assign(started as T & object, { pid: fresh.length === 1 ? fresh[0] : undefined }) as T & { pid: number | undefined };
}
