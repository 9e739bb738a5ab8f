/** The CLI's own command line: an unknown command, asked for by name or through `help`, is exit 2 with the list. */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { BIN } from "../support/serve-cli";

const run = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8" });

describe("switchyard's command line", () => {
  it("refuses an unknown command with exit 2, whether run, asked help for, or named like an object's own property", () => {
    for (const args of [["bogus"], ["help", "bogus"], ["toString"], ["help", "constructor"]]) {
      const result = run(...args);
      expect(result.status, args.join(" ")).toBe(2);
      expect(result.stderr, args.join(" ")).toContain(`unknown command "${args.at(-1)}"`);
      expect(result.stderr).toContain("Commands:");
    }
  });

  it("gives a command's usage through help, with every option its --help lists", () => {
    const help = run("help", "serve");
    expect(help.status).toBe(0);
    expect(help.stdout.split("\n")[0]).toContain("[--direct]");
    expect(run("serve", "--help").stdout).toBe(help.stdout);
  });
});
