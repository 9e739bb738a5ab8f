import type { AppliedLedger } from "../../core/state/applied-ledger";

/**
 * Storage of an AppliedLedger (src/core/state/applied-ledger.ts) for objects whose
 * batches have durable effects: the isolate's applied seq is written in the same
 * transaction as those effects, so a restart can never apply a stored batch again.
 *
 *   applied(isolate TEXT PRIMARY KEY, seq INTEGER, seen_at INTEGER)
 *     -- highest batch seq applied per isolate; rows of isolates silent past
 *     -- APPLIED_TTL_MS are deleted as the ledger forgets them
 */
export function createAppliedTable(sql: SqlStorage): void {
  sql.exec("CREATE TABLE IF NOT EXISTS applied (isolate TEXT PRIMARY KEY, seq INTEGER NOT NULL, seen_at INTEGER NOT NULL)");
}

export function loadApplied(sql: SqlStorage, ledger: AppliedLedger): void {
  for (const row of sql.exec<{ isolate: string; seq: number; seen_at: number }>("SELECT isolate, seq, seen_at FROM applied")) ledger.restore(row.isolate, row.seq, row.seen_at);
}

/** Call inside the transaction that wrote the batch's effects. */
export function saveApplied(sql: SqlStorage, ledger: AppliedLedger, isolate: string, now: number): void {
  sql.exec("INSERT OR REPLACE INTO applied (isolate, seq, seen_at) VALUES (?, ?, ?)", isolate, ledger.applied(isolate), now);
}

/** Sweeps the ledger and deletes the rows of the isolates it forgot. */
export function sweepApplied(sql: SqlStorage, ledger: AppliedLedger, now: number): void {
  deleteApplied(sql, ledger.sweep(now));
}

/** Deletes the rows of isolates a ledger forgot (a machine that sweeps its own ledger). */
export function deleteApplied(sql: SqlStorage, isolates: readonly string[]): void {
  for (const isolate of isolates) sql.exec("DELETE FROM applied WHERE isolate = ?", isolate);
}
