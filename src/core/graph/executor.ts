import type { RandomSource } from "../../lib/random";
import { uniformFloat, uniformInt } from "../../lib/random";
import type { CompiledGraph, CompiledNode, CompiledStep, ServiceTarget } from "./compile";
import { exists } from "../../lib/gjson";
import { allFinite, isJsonObject, parseJson, stableStringify } from "../../lib/json";

/** A step's or node's answer. `stream` is set only for a tail call that was not buffered. */
export type NodeResult =
  | { ok: true; status: number; body: Uint8Array; contentType: string | null; stream?: ReadableStream<Uint8Array> }
  | { ok: false; status: number; cause: string };

export interface ServiceCall {
  target: ServiceTarget;
  /** The step, for messages: "<node>/<step>". */
  label: string;
  body: Uint8Array;
  timeoutMs: number;
  retries: number;
  /** The answer goes straight to the client: it may stream instead of being buffered. */
  tail: boolean;
  signal: AbortSignal;
}

/** What a Router node decided: a child index, -1 (all children) or -2 (return the input). */
export type RouteChoice = { ok: true; route: number } | { ok: false; status: number; cause: string };

/** Everything the executor needs from the outside world; the seam injects real I/O. */
export interface GraphIO {
  callService(call: ServiceCall): Promise<NodeResult>;
  /** `signal` fires when the node's answer is no longer wanted (the client left, a losing branch). */
  route(graph: string, node: string, compiled: CompiledNode, input: Uint8Array, signal: AbortSignal): Promise<RouteChoice>;
  /** Fire-and-forget copy for a mirror step; its answer is ignored. */
  mirror(call: ServiceCall): void;
  random: RandomSource;
}

export interface GraphRun {
  result: NodeResult;
  /** Every upstream call made, as node/step chains: "root/step2>node1/step1". */
  trace: string[];
  /** Router nodes' choices, Seldon's meta.routing. */
  routing: Record<string, number>;
}

export const SWITCH_NO_MATCH = "None of the routes matched with the switch condition"; // KServe's exact cause text

/**
 * Runs a graph from its root with KServe's semantics (cmd/router/main.go): Sequence,
 * Switch, Splitter, Ensemble, plus Seldon-style Router nodes. Errors inside nested
 * nodes surface as 500 at the parent, as in KServe; a root Switch with no match is 404.
 */
export async function runGraph(graph: CompiledGraph, input: Uint8Array, io: GraphIO, signal: AbortSignal): Promise<GraphRun> {
  const run: GraphRun = { result: { ok: false, status: 500, cause: "not run" }, trace: [], routing: {} };
  run.result = await routeNode(graph, graph.root, input, io, run, { depth: 0, prefix: "", tail: true, signal });
  return run;
}

interface Position {
  depth: number;
  /** Trace prefix of the step that led here ("root/step2>"). */
  prefix: string;
  /** This node's answer is the graph's answer. */
  tail: boolean;
  signal: AbortSignal;
}

async function routeNode(graph: CompiledGraph, node: CompiledNode, input: Uint8Array, io: GraphIO, run: GraphRun, at: Position): Promise<NodeResult> {
  if (at.depth > graph.maxDepth) return { ok: false, status: 500, cause: `graph deeper than ${graph.maxDepth} nodes` };
  for (const mirror of node.mirrors) {
    if (uniformFloat(io.random) * 100 < mirror.percent) io.mirror(serviceCall(node, mirror.step, input, false, at.signal)!);
  }
  switch (node.routerType) {
    case "Sequence":
      return sequence(graph, node, input, io, run, at);
    case "Switch":
      return switchNode(graph, node, input, io, run, at);
    case "Splitter":
      return splitter(graph, node, input, io, run, at);
    case "Ensemble":
      return ensemble(graph, node, node.steps, input, io, run, at);
    case "Router":
      return router(graph, node, input, io, run, at);
  }
}

async function sequence(graph: CompiledGraph, node: CompiledNode, input: Uint8Array, io: GraphIO, run: GraphRun, at: Position): Promise<NodeResult> {
  let response: NodeResult & { ok: true } = { ok: true, status: 0, body: new Uint8Array(), contentType: null };
  const last = node.steps.length - 1;
  for (const [i, step] of node.steps.entries()) {
    let request = step.chainResponse && i > 0 ? response.body : input;
    if (step.mapPredictionsToInstances) request = predictionsToInstances(request);
    if (step.condition) {
      const previous = parseJson(response.body);
      if (!previous.ok) return { ok: false, status: 500, cause: "invalid response" };
      if (!exists(previous.value, step.condition)) return { ...response, status: 200 }; // KServe ≥ 0.15.1: stop with the previous answer
    }
    const result = await executeStep(graph, node, step, request, io, run, { ...at, tail: at.tail && i === last });
    if (!result.ok) return { ok: false, status: 500, cause: result.cause };
    if (step.hard && !isSuccess(result.status)) return result;
    response = result;
  }
  return response;
}

async function switchNode(graph: CompiledGraph, node: CompiledNode, input: Uint8Array, io: GraphIO, run: GraphRun, at: Position): Promise<NodeResult> {
  const parsed = parseJson(input);
  const route = parsed.ok ? node.steps.find((s) => s.condition !== null && exists(parsed.value, s.condition)) : undefined;
  if (!route) return { ok: false, status: 404, cause: SWITCH_NO_MATCH };
  const result = await executeStep(graph, node, route, input, io, run, at);
  return result.ok ? result : { ok: false, status: 500, cause: result.cause };
}

async function splitter(graph: CompiledGraph, node: CompiledNode, input: Uint8Array, io: GraphIO, run: GraphRun, at: Position): Promise<NodeResult> {
  const point = uniformInt(io.random, 100); // KServe: crypto/rand.Int(100), weights sum to 100
  let end = 0;
  const chosen = node.steps.find((s) => (end += s.weight) > point);
  if (!chosen) return { ok: false, status: 500, cause: "no route was selected by the splitter" };
  const result = await executeStep(graph, node, chosen, input, io, run, at);
  return result.ok ? result : { ok: false, status: 500, cause: result.cause };
}

/**
 * All steps in parallel on the node input; the answer is {stepName|index: answer}, keys
 * sorted as Go's encoding/json writes them. The first Hard failure in step order wins;
 * any error, or an answer that is not a JSON object or holds a number past float64 (Go
 * fails to decode it), is a 500. Once the outcome is
 * known, calls still running are cancelled (KServe leaves its goroutines blocked).
 */
async function ensemble(graph: CompiledGraph, node: CompiledNode, steps: CompiledStep[], input: Uint8Array, io: GraphIO, run: GraphRun, at: Position): Promise<NodeResult> {
  const losers = new AbortController();
  const signal = AbortSignal.any([at.signal, losers.signal]);
  const pending = steps.map((step) => executeStep(graph, node, step, input, io, run, { ...at, tail: false, signal }));
  try {
    const merged: Record<string, unknown> = {};
    for (const [i, step] of steps.entries()) {
      const result = await pending[i]!;
      if (!result.ok) return { ok: false, status: 500, cause: result.cause };
      const parsed = parseJson(result.body);
      if (!parsed.ok || !isJsonObject(parsed.value)) {
        return { ok: false, status: 500, cause: `step ${step.label} did not answer with a JSON object` };
      }
      if (!allFinite(parsed.value)) return { ok: false, status: 500, cause: `step ${step.label} answered a number out of float64's range` };
      if (step.hard && !isSuccess(result.status)) return { ok: true, status: result.status, body: encode(stableStringify(parsed.value)), contentType: "application/json" };
      merged[step.key] = parsed.value;
    }
    return { ok: true, status: 200, body: encode(stableStringify(merged)), contentType: "application/json" };
  } finally {
    losers.abort();
    await Promise.allSettled(pending);
  }
}

async function router(graph: CompiledGraph, node: CompiledNode, input: Uint8Array, io: GraphIO, run: GraphRun, at: Position): Promise<NodeResult> {
  const choice = await io.route(graph.name, node.name, node, input, at.signal);
  if (!choice.ok) return choice;
  run.routing[node.name] = choice.route;
  if (choice.route === ROUTE_TO_NO_CHILDREN) return { ok: true, status: 200, body: input, contentType: null };
  if (choice.route === ROUTE_TO_ALL_CHILDREN) return ensemble(graph, node, node.steps, input, io, run, at);
  const child = node.steps[choice.route];
  if (choice.route < 0 || !child) {
    return { ok: false, status: 502, cause: `router of node "${node.name}" chose route ${choice.route}, but the node has ${node.steps.length} children (0..${node.steps.length - 1}, -1 all, -2 none)` };
  }
  // Buffered, never streamed: the answer carries meta.routing, which feedback depends on.
  const result = await executeStep(graph, node, child, input, io, run, { ...at, tail: false });
  return result.ok ? result : { ok: false, status: 500, cause: result.cause };
}

export const ROUTE_TO_ALL_CHILDREN = -1; // Seldon's routeToAllChildren
export const ROUTE_TO_NO_CHILDREN = -2; // Seldon's routeToNoChildren

async function executeStep(graph: CompiledGraph, node: CompiledNode, step: CompiledStep, input: Uint8Array, io: GraphIO, run: GraphRun, at: Position): Promise<NodeResult> {
  const label = `${at.prefix}${node.name}/${step.label}`;
  if (step.target.kind === "node") {
    const next = graph.nodes.get(step.target.node);
    if (!next) return { ok: false, status: 500, cause: `invalid route type: node "${step.target.node}" not found` };
    return routeNode(graph, next, input, io, run, { ...at, depth: at.depth + 1, prefix: `${label}>` });
  }
  run.trace.push(label);
  return io.callService(serviceCall(node, step, input, at.tail, at.signal)!);
}

/** The call a service step makes; null for a step that links to a node (validation keeps mirrors off nodes). */
function serviceCall(node: CompiledNode, step: CompiledStep, body: Uint8Array, tail: boolean, signal: AbortSignal): ServiceCall | null {
  if (step.target.kind !== "service") return null;
  return { target: step.target.service, label: `${node.name}/${step.label}`, body, timeoutMs: step.timeoutMs, retries: step.retries, tail, signal };
}

/**
 * KServe's mapPredictionsToInstances: {"predictions": [...]} becomes {"instances": [...]};
 * every other field is dropped, and input without a non-empty predictions list passes as is.
 */
function predictionsToInstances(request: Uint8Array): Uint8Array {
  const parsed = parseJson(request);
  if (!parsed.ok || !isJsonObject(parsed.value)) return request;
  const predictions = parsed.value.predictions;
  if (!Array.isArray(predictions) || predictions.length === 0) return request;
  return encode(JSON.stringify({ instances: predictions }));
}

const isSuccess = (status: number): boolean => status >= 200 && status < 300;
const encoder = new TextEncoder();
const encode = (text: string): Uint8Array => encoder.encode(text);
