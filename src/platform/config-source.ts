import type { ConfigIssue } from "../core/config/issues";
import { loadBlob } from "../core/config/blob";
import { CONFIG_POINTER_KEY, configBlobKey } from "../core/config/kv-keys";
import type { ConfigSnapshot } from "../core/targets/snapshot";
import { buildSnapshot } from "../core/targets/snapshot";
import { clientKeyDigests } from "../core/config/client-keys";
import { keyEntries } from "../core/limits/principal";

export const DEFAULT_CONFIG_REFRESH_MS = 5_000; // isolate cache lifetime when CONFIG_REFRESH_MS is unset
export const POINTER_CACHE_TTL_S = 30; // KV's minimum cacheTtl; the pointer is the only key that changes
export const BLOB_CACHE_TTL_S = 86_400; // blobs are immutable, so the edge may keep them a day
const MAX_LIST_PAGES = 20; // 20,000 published versions (a page is 1,000 keys); past that there is no fallback
export const FALLBACK_TRIES = 5; // older versions a fresh isolate tries when KV's names one it rejects: enough to skip a run of bad pushes, few enough that a cold start stays cheap

export type { ConfigSnapshot };

export interface Rejection {
  version: string;
  errors: ConfigIssue[];
  at: number;
}

export interface ConfigState {
  current: ConfigSnapshot | null;
  /** The newest version that failed validation while `current` kept serving. */
  rejected: Rejection | null;
  checkedAt: number;
  /** Last KV read failure, if the last refresh could not read KV. */
  readError: string | null;
}

export interface ConfigEnv {
  CONFIG: KVNamespace;
  CONFIG_REFRESH_MS?: string;
  [name: string]: unknown;
}

/**
 * The isolate's view of the live config. The pointer is re-read at most every
 * CONFIG_REFRESH_MS; a new version is parsed once and swapped in only if it validates.
 * Staleness is bounded by CONFIG_REFRESH_MS + the pointer's KV cacheTtl (30 s) + KV's
 * own propagation (typically < 60 s); see the README.
 */
export class ConfigSource {
  #state: ConfigState = { current: null, rejected: null, checkedAt: -Infinity, readError: null };

  constructor(private readonly now: () => number = Date.now) {}

  /** The cached state if it is within CONFIG_REFRESH_MS, else null: no await on the hot path. */
  fresh(env: ConfigEnv): ConfigState | null {
    return this.#state.current && this.now() - this.#state.checkedAt < parseRefreshMs(env.CONFIG_REFRESH_MS) ? this.#state : null;
  }

  async get(env: ConfigEnv): Promise<ConfigState> {
    const fresh = this.fresh(env);
    if (fresh) return fresh;
    const now = this.now();
    // The first request past the interval claims the refresh; requests arriving while it
    // runs keep serving the current snapshot. Each refreshing request does its own KV
    // reads: workerd forbids one request from awaiting I/O that another request started.
    if (this.#state.current) this.#state = { ...this.#state, checkedAt: now };
    await this.#refresh(env);
    return this.#state;
  }

  /** Forget the freshness stamp so the next `get` re-reads the pointer (after an admin publish). */
  invalidate(): void {
    this.#state = { ...this.#state, checkedAt: -Infinity };
  }

  // Other requests may update #state while this one awaits, so it is re-read after every await.
  async #refresh(env: ConfigEnv): Promise<void> {
    let version: string | null;
    try {
      version = await env.CONFIG.get(CONFIG_POINTER_KEY, { cacheTtl: POINTER_CACHE_TTL_S });
    } catch (error) {
      this.#state = { ...this.#state, checkedAt: this.now(), readError: `reading ${CONFIG_POINTER_KEY}: ${(error as Error).message}` };
      return;
    }
    const checkedAt = this.now();
    if (version === null || version === this.#state.current?.version || version === this.#state.rejected?.version) {
      this.#state = { ...this.#state, checkedAt, readError: null };
      // Still nothing to serve (the fallback found nothing, or could not list): look again.
      if (version !== null && this.#state.current === null && version === this.#state.rejected?.version) await this.#fallBack(env, version, checkedAt);
      return;
    }

    let text: string | null;
    try {
      text = await env.CONFIG.get(configBlobKey(version), { cacheTtl: BLOB_CACHE_TTL_S });
    } catch (error) {
      this.#state = { ...this.#state, checkedAt, readError: `reading ${configBlobKey(version)}: ${(error as Error).message}` };
      return;
    }
    if (text === null) {
      this.#reject(version, [{ path: "(kv)", message: `${CONFIG_POINTER_KEY} points at ${configBlobKey(version)}, which does not exist` }], checkedAt);
      await this.#fallBack(env, version, checkedAt);
      return;
    }

    const result = await loadBlob(text, env);
    if (!result.ok) {
      this.#reject(version, result.errors, checkedAt);
      await this.#fallBack(env, version, checkedAt);
      return;
    }
    await this.#adopt(version, result, checkedAt, null);
  }

  async #adopt(version: string, result: Extract<Awaited<ReturnType<typeof loadBlob>>, { ok: true }>, checkedAt: number, rejected: Rejection | null): Promise<void> {
    const digests = await clientKeyDigests(keyEntries(result.config));
    if (this.#state.current?.version === version) return; // a concurrent refresh got here first
    this.#state = {
      current: buildSnapshot({ version, source: `kv:${configBlobKey(version)}`, config: result.config, clientKeyDigests: digests, redactions: result.redactions, loadedAt: checkedAt }),
      rejected,
      checkedAt,
      readError: null,
    };
  }

  /**
   * An isolate with no good version of its own (a fresh one, after a deploy, an eviction,
   * in a new location) whose pointer names a version it rejects: the last good version is
   * in KV too, among the versions published before. Without this every new isolate
   * answered 503 no_config while older ones served, until someone published again. The
   * newest of the FALLBACK_TRIES versions before the rejected one that loads is served;
   * the rejection stays shown, and the pointer is read again every refresh as before.
   */
  async #fallBack(env: ConfigEnv, rejected: string, checkedAt: number): Promise<void> {
    if (this.#state.current) return; // it keeps serving its own last good version
    const prefix = configBlobKey("");
    let older: string[] = [];
    try {
      // KV lists in key order, oldest first (ids start with their publish time), a page at a time.
      let cursor: string | undefined;
      let complete = false;
      for (let page = 0; page < MAX_LIST_PAGES && !complete; page++) {
        const listed = await env.CONFIG.list({ prefix, ...(cursor !== undefined && { cursor }) });
        for (const key of listed.keys) {
          const version = key.name.slice(prefix.length);
          if (version < rejected) older.push(version);
        }
        older = older.sort().reverse().slice(0, FALLBACK_TRIES);
        complete = listed.list_complete;
        if (!listed.list_complete) cursor = listed.cursor;
      }
      if (!complete) return; // the newest versions were not reached: an old one is no "last good"
    } catch {
      return; // listing failed: no fallback this time, the next refresh tries again
    }
    const rejection = this.#state.rejected;
    for (const version of older) {
      const text = await env.CONFIG.get(configBlobKey(version), { cacheTtl: BLOB_CACHE_TTL_S }).catch(() => null);
      if (text === null) continue;
      const result = await loadBlob(text, env);
      if (!result.ok) continue;
      console.warn(JSON.stringify({ event: "config_fallback", rejected, serving: version }));
      await this.#adopt(version, result, checkedAt, rejection);
      return;
    }
  }

  #reject(version: string, errors: ConfigIssue[], at: number): void {
    // Paths and messages only: values, and so secrets, never reach the log.
    console.warn(JSON.stringify({ event: "config_rejected", version, errors }));
    this.#state = { ...this.#state, rejected: { version, errors, at }, checkedAt: at, readError: null };
  }
}

function parseRefreshMs(raw: string | undefined): number {
  const value = Number(raw);
  return raw !== undefined && raw !== "" && Number.isFinite(value) && value >= 0 ? value : DEFAULT_CONFIG_REFRESH_MS;
}
