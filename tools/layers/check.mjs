#!/usr/bin/env node
/**
 * The layer check `npm test` runs first: dependency-cruiser with ./rules.cjs (import
 * circles, layers running one way), then folder-level cycles, which dependency-cruiser
 * does not judge: at every depth, files are collapsed to their folder and the folders'
 * imports must form no loop either (src/core/picking may use src/core/health, never both ways).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SCANNED = ["src", "tools", "bench", "bin"];
const bin = path.join(ROOT, "node_modules/.bin/depcruise");

let report;
try {
  const out = execFileSync(bin, ["--config", "tools/layers/rules.cjs", "--output-type", "json", ...SCANNED], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  report = JSON.parse(out);
} catch (error) {
  // depcruise exits non-zero on violations; its JSON is still on stdout.
  if (!error.stdout) throw error;
  report = JSON.parse(error.stdout);
}

const problems = [];
for (const v of report.summary.violations) {
  const via = v.cycle ? ` (circle: ${[v.from, ...v.cycle.map((c) => c.name ?? c)].join(" → ")})` : "";
  problems.push(`${v.rule.name}: ${v.from} → ${v.to}${via}`);
}

// Folder-level cycles. A file's folder at depth d is its first d path segments (the file itself excluded).
const edges = [];
for (const m of report.modules) {
  if (m.coreModule || m.couldNotResolve || m.source.startsWith("node_modules")) continue;
  for (const d of m.dependencies) {
    if (d.coreModule || d.couldNotResolve || d.resolved.startsWith("node_modules")) continue;
    edges.push([m.source, d.resolved]);
  }
}
const folderAt = (file, depth) => {
  const parts = file.split("/").slice(0, -1);
  return parts.length >= depth ? parts.slice(0, depth).join("/") : null;
};
const reported = new Set();
for (let depth = 1; depth <= 5; depth++) {
  const graph = new Map();
  const why = new Map();
  for (const [from, to] of edges) {
    const a = folderAt(from, depth);
    const b = folderAt(to, depth);
    if (a === null || b === null || a === b) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a).add(b);
    const key = `${a}\u0000${b}`;
    if (!why.has(key)) why.set(key, `${from} → ${to}`);
  }
  for (const cycle of stronglyConnected(graph)) {
    const name = [...cycle].sort().join(" ↔ ");
    if (reported.has(name)) continue;
    reported.add(name);
    const links = [];
    for (const a of cycle) for (const b of graph.get(a) ?? []) if (cycle.includes(b)) links.push(`    ${why.get(`${a}\u0000${b}`)}`);
    problems.push(`folder-cycle: ${name}\n${links.join("\n")}`);
  }
}

if (problems.length > 0) {
  console.error(`Layer check failed (tools/layers/rules.cjs, docs/architecture.md):\n${problems.map((p) => `  ${p}`).join("\n")}`);
  process.exit(1);
}
console.log(`Layer check: ${report.summary.totalCruised} modules, ${report.summary.totalDependenciesCruised} imports; no circle, no folder cycle, layers one way.`);

/** Tarjan's algorithm: components of more than one folder. */
function stronglyConnected(graph) {
  let index = 0;
  const stack = [];
  const info = new Map();
  const out = [];
  const visit = (v) => {
    info.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!info.has(w)) {
        visit(w);
        info.get(v).low = Math.min(info.get(v).low, info.get(w).low);
      } else if (info.get(w).onStack) info.get(v).low = Math.min(info.get(v).low, info.get(w).index);
    }
    if (info.get(v).low === info.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        info.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component);
    }
  };
  for (const v of graph.keys()) if (!info.has(v)) visit(v);
  return out;
}
