/**
 * Rewrites the dialect translations' golden table (test/unit/dialects/golden.json) from the
 * translators: `npx tsx test/support/write-dialect-golden.ts`, then review the diff line by
 * line: a changed line is a changed translation.
 */
import { writeFileSync } from "node:fs";
import { CASES } from "../unit/dialects/cases";
import { translate } from "../unit/dialects/translate";

const golden = Object.fromEntries(CASES.map((c) => [`${c.kind}: ${c.name}`, translate(c)]));
writeFileSync(new URL("../unit/dialects/golden.json", import.meta.url), `${JSON.stringify(golden, null, 2)}\n`);
