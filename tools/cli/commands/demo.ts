import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startFakeOpenAI, type FakeServer } from "../../fakes/fake-openai";
import { parseFlags, parsePort, UsageError, type Command } from "../args";
import { checkConfigFile, printWarnings } from "../config-file";
import { startHangupRelay, type HangupRelay } from "../hangup-relay";
import { untilSignal, waitForHttp } from "../lifecycle";
import { PROJECT_ROOT } from "../paths";
import { preferPort } from "../ports";
import type { Router } from "../runtime";

const DEMO_CONFIG = path.join(PROJECT_ROOT, "examples/demo.yaml");
const DEFAULT_PORT = 8787;
const ADMIN_TOKEN = "demo-admin-token"; // guards /admin/*; a fixed throwaway value, safe to print
// The ports examples/demo.yaml falls back to, so it also works with a hand-run fleet;
// the real URLs are always passed as vars in case a port was taken.
const FAKE_SERVERS = [
  { id: "local-a", port: 9101, urlVar: "DEMO_LOCAL_A_URL" },
  { id: "local-b", port: 9102, urlVar: "DEMO_LOCAL_B_URL" },
  { id: "remote-a", port: 9103, urlVar: "DEMO_REMOTE_A_URL" },
] as const;

export const command: Command = {
  usage: `Usage: switchyard demo [--port N]

Starts three fake OpenAI-compatible model servers (local-a, local-b, remote-a) and the
router on http://127.0.0.1:N (default ${DEFAULT_PORT}, or a free port if that is taken) with
examples/demo.yaml, then prints curl commands to try. Ctrl-C stops everything.
State lives in a temporary directory, so the demo never touches .wrangler/state.`,

  async run(argv) {
    const { values, positionals } = parseFlags(argv, { port: { type: "string" } });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const wantedPort = parsePort(values.port, DEFAULT_PORT);

    const fakes: FakeServer[] = [];
    let router: Router | undefined;
    let relay: HangupRelay | undefined;
    const stateDir = await mkdtemp(path.join(os.tmpdir(), "switchyard-demo-"));
    try {
      for (const s of FAKE_SERVERS) fakes.push(await startFake(s.id, s.port));
      const vars: Record<string, string> = { ADMIN_TOKEN };
      FAKE_SERVERS.forEach((s, i) => (vars[s.urlVar] = fakes[i]!.url));

      const checked = checkConfigFile(DEMO_CONFIG, { vars, unresolvedVars: "error" });
      if (!checked) return 1;
      printWarnings(checked.warnings);

      const { startRouter } = await import("../runtime");
      const port = await preferPort(wantedPort);
      // As `serve` does: workerd on any free port, behind the relay that lets the router see a client leave early.
      router = await startRouter({ port: 0, configText: checked.text, vars, persistTo: stateDir, cronEveryMinute: true });
      await waitForHttp(router.url);
      relay = await startHangupRelay({ host: "127.0.0.1", port }, new URL(router.url));
      const version = (await router.configVersion()) ?? "?";
      const stopped = untilSignal(); // listening before the banner: a script may signal as soon as it reads it
      process.stdout.write(banner(relay.url, fakes, version));
      await stopped;
      process.stdout.write("\nstopping demo\n");
      return 0;
    } finally {
      await relay?.close();
      await router?.dispose();
      await Promise.all(fakes.map((f) => f.close()));
      await rm(stateDir, { recursive: true, force: true });
    }
  },
};

/** On the preferred port if possible; another process may own it, or grab it first. */
async function startFake(id: string, preferred: number): Promise<FakeServer> {
  try {
    return await startFakeOpenAI({ id, port: await preferPort(preferred) });
  } catch {
    return startFakeOpenAI({ id });
  }
}

function banner(url: string, fakes: FakeServer[], version: string): string {
  const json = "-H 'content-type: application/json'";
  const chat = (extra: string) =>
    `'{"model":"demo-chat",${extra}"messages":[{"role":"user","content":"Hello from the demo"}]}'`;
  return `
switchyard ready on ${url} (config ${version})

fake model servers:
${fakes.map((f) => `  ${f.id.padEnd(9)} ${f.url}`).join("\n")}

try:
  # a chat completion (demo-chat is split 60/40 between local and remote replicas)
  curl -s ${url}/v1/chat/completions ${json} -d ${chat("")}

  # the same, streamed
  curl -N ${url}/v1/chat/completions ${json} -d ${chat('"stream":true,')}

  # models, and the live routing table (with circuit, health and in-flight per replica)
  curl -s ${url}/v1/models
  curl -s ${url}/routing -H "authorization: Bearer ${ADMIN_TOKEN}"   # admin only: the replicas are on 127.0.0.1

  # the split: 20 different users, each pinned to the replica its first request drew
  for i in $(seq 20); do curl -s -o /dev/null -D - ${url}/v1/chat/completions ${json} -H "authorization: Bearer user-$i" \\
    -d ${chat("")} | tr -d '\\r' | grep -i '^x-switchyard-replica:'; done | sort | uniq -c

  # affinity: one user's 10 requests all land on one replica
  for i in $(seq 10); do curl -s -o /dev/null -D - ${url}/v1/chat/completions ${json} -H "authorization: Bearer alice" \\
    -d ${chat("")} | tr -d '\\r' | grep -i '^x-switchyard-replica:'; done | sort | uniq -c

  # an inference graph (Ensemble over both local replicas); x-switchyard-route shows the path
  curl -si ${url}/graphs/demo-ensemble ${json} -d ${chat("")}

  # Prometheus metrics, summed from the Durable Objects
  curl -s ${url}/metrics -H "authorization: Bearer ${ADMIN_TOKEN}"

  # the live dashboard: open in a browser and log in with the admin token
  ${url}/dashboard

admin token (for PUT /admin/config, /metrics, /routing, /dashboard, X-Route-Pin): ${ADMIN_TOKEN}
Ctrl-C stops the router and the fake servers.
`;
}
