import { describeConfig } from "../../../src/core/targets/describe";
import { parseFlags, UsageError, type Command } from "../args";
import { checkConfigFile, printWarnings } from "../config-file";

export const command: Command = {
  usage: `Usage: switchyard validate FILE

Checks a config document (YAML or JSON) and prints what it routes where.
\${VAR} references resolve from this shell's environment; those without a value are
warnings, since the deployed Worker resolves them from its secrets.
Exit codes: 0 valid, 1 invalid or unreadable, 2 a bad command line.`,

  async run(argv) {
    const { positionals } = parseFlags(argv, {});
    if (positionals.length !== 1) throw new UsageError("validate takes exactly one FILE");
    const file = positionals[0]!;
    const checked = checkConfigFile(file, { vars: process.env, unresolvedVars: "defer" });
    if (!checked) return 1;
    process.stdout.write(`${file} is valid\n${describeConfig(checked.config)}\n`);
    printWarnings(checked.warnings);
    return 0;
  },
};
