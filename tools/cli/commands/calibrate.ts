import { readFileSync } from "node:fs";
import { parseFlags, UsageError, type Command } from "../args";

export const command: Command = {
  usage: `Usage: switchyard calibrate MODEL --url URL [--probes N] [--prompt TEXT] [--max-tokens N] [--samples FILE]

Seeds a RouteWise model's latency envelope through the router's admin endpoint
(POST /admin/routewise/MODEL/calibrate), so a model with quota routes can start serving.

  --url URL          the router (e.g. http://127.0.0.1:8787 or your deployed host)
  --probes N         send N streamed probe requests to each route (paid requests; default 20)
  --prompt TEXT      the probe prompt; --max-tokens N its answer length (default 32)
  --samples FILE     instead of probing, seed recent traffic: a JSON array of
                     {route, ttft_ms, total_ms, prompt_tokens, output_tokens, cached_tokens?, at?}

The admin token is read from SWITCHYARD_ADMIN_TOKEN. Exit codes: 0 calibrated, 1 not
(yet) calibrated or refused, 2 usage.`,

  async run(argv) {
    const { values, positionals } = parseFlags(argv, {
      url: { type: "string" },
      probes: { type: "string" },
      prompt: { type: "string" },
      "max-tokens": { type: "string" },
      samples: { type: "string" },
    });
    if (positionals.length !== 1) throw new UsageError("calibrate takes exactly one MODEL");
    if (values.url === undefined) throw new UsageError("--url is required");
    const token = process.env.SWITCHYARD_ADMIN_TOKEN;
    if (!token) throw new UsageError("set SWITCHYARD_ADMIN_TOKEN to the router's ADMIN_TOKEN");
    const positive = (raw: string | undefined, flag: string): number | undefined => {
      if (raw === undefined) return undefined;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer`);
      return n;
    };
    let body: Record<string, unknown>;
    if (values.samples !== undefined) {
      if (values.probes !== undefined) throw new UsageError("--samples and --probes exclude each other");
      try {
        body = { samples: JSON.parse(readFileSync(values.samples, "utf8")) as unknown };
      } catch (err) {
        process.stderr.write(`switchyard calibrate: cannot read ${values.samples}: ${(err as Error).message}\n`);
        return 1;
      }
    } else {
      body = { probes: positive(values.probes, "--probes") ?? 20 };
      if (values.prompt !== undefined) body.prompt = values.prompt;
      const maxTokens = positive(values["max-tokens"], "--max-tokens");
      if (maxTokens !== undefined) body.max_tokens = maxTokens;
    }
    const url = new URL(`/admin/routewise/${encodeURIComponent(positionals[0]!)}/calibrate`, values.url);
    let response: Response;
    try {
      response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    } catch (err) {
      process.stderr.write(`switchyard calibrate: cannot reach ${values.url}: ${(err as Error).message}\n`);
      return 1;
    }
    const text = await response.text();
    if (!response.ok) {
      process.stderr.write(`switchyard calibrate: the router answered ${response.status}: ${text}\n`);
      return 1;
    }
    process.stdout.write(`${text}\n`);
    const result = JSON.parse(text) as { calibrated: boolean };
    return result.calibrated ? 0 : 1;
  },
};
