/** Types of the fake OTLP collector (tools/fakes/fake-otlp.ts), free of Node imports so tests inside workerd share them. */

export interface FakeCollectorBehaviour {
  /** `ok` (default): 200 and record; `hang`: read the export, record it, never answer; `status`: answer `status` and record. */
  mode?: "ok" | "hang" | "status";
  /** With mode `status` (default 503). */
  status?: number;
}

export interface CollectorExport {
  /** Arrival, epoch ms. */
  at: number;
  path: string;
  headers: Record<string, string>;
  /** The raw body as sent (tests look for secrets in it). */
  raw: string;
  /** The parsed body (an ExportTraceServiceRequest in OTLP JSON), or null when it did not parse. */
  body: unknown;
}

export interface CollectorStats {
  exports: CollectorExport[];
  /** Connections still held by a hanging collector. */
  held: number;
}
