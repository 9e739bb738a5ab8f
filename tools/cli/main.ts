import { UsageError, type Command } from "./args";

/**
 * Commands load lazily: `validate` should not pay for importing Miniflare and wrangler
 * (about two seconds) that only `serve` and `demo` need.
 */
const COMMANDS: Record<string, { summary: string; load: () => Promise<{ command: Command }> }> = {
  validate: { summary: "check a config file and show what it routes where", load: () => import("./commands/validate") },
  serve: { summary: "run the router locally on workerd", load: () => import("./commands/serve") },
  calibrate: { summary: "seed a RouteWise model's latency envelope (probes or recent traffic) through the admin endpoint", load: () => import("./commands/calibrate") },
  usage: { summary: "show each limit bucket's limits, spend and what is left (GET /admin/usage)", load: () => import("./commands/usage") },
  push: { summary: "publish a config to the CONFIG KV namespace (local or --remote)", load: () => import("./commands/push") },
  demo: { summary: "run the router with three fake model servers and print curl examples", load: () => import("./commands/demo") },
  "fake-vllm": { summary: "start fake vLLM replicas (prefix cache, queue, KV and LoRA modelled) for tests and benchmarks", load: () => import("./commands/fake-vllm") },
};

const USAGE = `Usage: switchyard <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(11)}${c.summary}`)
  .join("\n")}

Run "switchyard <command> --help" for a command's options.`;

const EXIT_USAGE = 2; // the conventional code for a malformed command line

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "--help" || name === "-h" || name === "help") {
    const topic = name === "help" ? rest[0] : undefined;
    const entry = topic === undefined || !Object.hasOwn(COMMANDS, topic) ? undefined : COMMANDS[topic];
    if (topic !== undefined && !entry) {
      process.stderr.write(`switchyard: unknown command "${topic}"\n\n${USAGE}\n`);
      return EXIT_USAGE;
    }
    process.stdout.write(`${entry ? (await entry.load()).command.usage : USAGE}\n`);
    return 0;
  }
  const entry = name === undefined || !Object.hasOwn(COMMANDS, name) ? undefined : COMMANDS[name];
  if (!entry) {
    process.stderr.write(`${name === undefined ? "" : `switchyard: unknown command "${name}"\n\n`}${USAGE}\n`);
    return EXIT_USAGE;
  }
  const { command } = await entry.load();
  if (rest.includes("--help") || rest.includes("-h")) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`switchyard ${name}: ${err.message}\n\n${command.usage}\n`);
    return EXIT_USAGE;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`switchyard: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
