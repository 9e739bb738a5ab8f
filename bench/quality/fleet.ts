/**
 * A fleet of fake vLLM replicas (tools/fakes/fake-vllm.ts) in this process, on 127.0.0.1,
 * all with the same knobs. In-process so the bench reads each replica's queue from its
 * stats() every few milliseconds without an HTTP round trip of its own.
 */
import { startFakeVllm, type FakeVllmServer, type MetricsMode } from "../../tools/fakes/fake-vllm";

/** The replica knobs the bench sets; the rest keep the fake's defaults. */
export interface FleetKnobs {
  replicas: number;
  blockSize: number;
  numGpuBlocks: number;
  maxNumSeqs: number;
  prefillMsPerToken: number;
  decodeMsPerToken: number;
  decodeMsPerExtraSeq: number;
  streamTokensPerChunk: number;
}

export interface Fleet {
  replicas: { id: string; url: string }[];
  /** running + waiting of each replica, now. */
  inFlight(): number[];
  /** GET /metrics answered so far, per replica: how often the router has scraped. */
  metricsReads(): number[];
  /** Sets how /metrics answers on the first `count` replicas. */
  setMetrics(count: number, mode: MetricsMode): void;
  close(): Promise<void>;
}

export async function startFleet(knobs: FleetKnobs, model: string): Promise<Fleet> {
  const { replicas, ...options } = knobs;
  const started = await Promise.allSettled(Array.from({ length: replicas }, (_, i) => startFakeVllm({ ...options, id: `r${i}`, model, seed: 0 })));
  const servers = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    await closeAll(servers);
    throw failed.reason;
  }
  return {
    replicas: servers.map((s) => ({ id: s.id, url: s.url })),
    inFlight: () =>
      servers.map((s) => {
        const { running, waiting } = s.stats();
        return running + waiting;
      }),
    metricsReads: () => servers.map((s) => s.stats().metricsReads),
    setMetrics: (count, mode) => {
      for (const s of servers.slice(0, count)) s.tune({ metrics: mode });
    },
    close: () => closeAll(servers),
  };
}

async function closeAll(servers: FakeVllmServer[]): Promise<void> {
  await Promise.allSettled(servers.map((s) => s.close()));
}
