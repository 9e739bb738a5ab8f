import type { Priority } from "../../core/config/schema";
import { requestPriority } from "../../core/pool/admission";
import type { SloTargets } from "../state/pool-agent";

const MAX_SLO_MS = 600_000; // ten minutes: past any try timeout, so a larger objective means nothing

export type RequestHints =
  | { ok: true; priority: Priority; slo: SloTargets }
  | { ok: false; code: "invalid_priority" | "invalid_slo"; message: string; param: string };

/**
 * What a client may ask of a pool besides its model: a load-shedding class
 * (`X-Switchyard-Priority`, never above the model's own) and latency objectives
 * (`X-SLO-TTFT-Ms`, `X-SLO-TPOT-Ms`). A malformed value is the client's error.
 */
export function requestHints(configured: Priority, headers: Headers): RequestHints {
  const priority = requestPriority(configured, headers.get("x-switchyard-priority"));
  if (priority === null) return { ok: false, code: "invalid_priority", message: "X-Switchyard-Priority must be one of sheddable, standard, critical", param: "x-switchyard-priority" };
  const slo: SloTargets = {};
  for (const [header, key, name] of [["x-slo-ttft-ms", "ttftMs", "X-SLO-TTFT-Ms"], ["x-slo-tpot-ms", "tpotMs", "X-SLO-TPOT-Ms"]] as const) {
    const raw = headers.get(header);
    if (raw === null) continue;
    const text = raw.trim();
    const ms = Number(text);
    // Digits only, as the message says: Number() would also take "0x10", "1e3" and "1_0"-less forms.
    if (!(/^\d+$/.test(text) && ms > 0 && ms <= MAX_SLO_MS)) {
      return { ok: false, code: "invalid_slo", message: `${name} must be a whole number of milliseconds from 1 to ${MAX_SLO_MS}`, param: header };
    }
    slo[key] = ms;
  }
  return { ok: true, priority, slo };
}
