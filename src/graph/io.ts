import type { Env } from "../env";
import type { RandomSource } from "../routing/random";
import { uniformFloat } from "../routing/random";
import { abTestArm } from "./bandits";
import type { BanditParams } from "./bandits";
import type { CompiledNode } from "./compile";
import type { GraphIO, NodeResult, RouteChoice, ServiceCall } from "./executor";
import { parseJson } from "./json";
import { parseSeldonRoute } from "./seldon";
import { banditObjectName } from "../../durable-objects/bandit-state";

export { banditObjectName };

const RETRY_BASE_MS = 50; // first backoff; doubles per retry, with full jitter
const ROUTER_TIMEOUT_MS = 10_000; // an external router that takes longer is not routing, it is failing

/** Real I/O for one graph request: fetch for steps, the BANDIT objects for learning routers. */
export function graphIO(opts: { env: Env; headers: Headers; random: RandomSource; waitUntil: (p: Promise<unknown>) => void }): GraphIO {
  const callService = (call: ServiceCall) => postStep(call, opts.headers, opts.random);
  return {
    random: opts.random,
    callService,
    mirror(call) {
      // Independent of the client's request: a shadow copy finishes (or times out) on its own.
      opts.waitUntil(callService({ ...call, tail: false, signal: new AbortController().signal }).then((r) => void (r.ok ? r.stream?.cancel() : undefined)));
    },
    route: (graph, node, compiled, input) => chooseRoute(opts, graph, node, compiled, input),
  };
}

async function postStep(call: ServiceCall, headers: Headers, random: RandomSource): Promise<NodeResult> {
  for (let attempt = 0; ; attempt++) {
    const controller = new AbortController();
    const onCancel = () => controller.abort(call.signal.reason);
    call.signal.addEventListener("abort", onCancel);
    const timer = setTimeout(() => controller.abort(new DOMException("step timeout", "TimeoutError")), call.timeoutMs);
    try {
      const res = await fetch(call.url, { method: "POST", headers, body: call.body, signal: controller.signal });
      clearTimeout(timer); // the per-step timeout bounds the wait for an answer, not a streamed body
      if (res.status >= 500 && attempt < call.retries) {
        await res.body?.cancel();
        await backoff(attempt, random);
        continue;
      }
      const contentType = res.headers.get("content-type");
      if (call.tail && res.body) return { ok: true, status: res.status, body: new Uint8Array(), contentType, stream: res.body };
      return { ok: true, status: res.status, body: new Uint8Array(await res.arrayBuffer()), contentType };
    } catch (error) {
      clearTimeout(timer);
      if (call.signal.aborted) return { ok: false, status: 500, cause: "cancelled" };
      if (attempt < call.retries) {
        await backoff(attempt, random);
        continue;
      }
      const timedOut = controller.signal.reason instanceof DOMException && controller.signal.reason.name === "TimeoutError";
      return { ok: false, status: 500, cause: `Post "${call.url}": ${timedOut ? `no answer within ${call.timeoutMs} ms` : (error as Error).message}` };
    } finally {
      call.signal.removeEventListener("abort", onCancel);
    }
  }
}

function backoff(attempt: number, random: RandomSource): Promise<void> {
  const ceiling = RETRY_BASE_MS * 2 ** attempt;
  return new Promise((resolve) => setTimeout(resolve, uniformFloat(random) * ceiling));
}

async function chooseRoute(
  opts: { env: Env; headers: Headers; random: RandomSource },
  graph: string,
  node: string,
  compiled: CompiledNode,
  input: Uint8Array,
): Promise<RouteChoice> {
  const spec = compiled.router;
  if (!spec) return { ok: false, status: 500, cause: `node "${node}" has no router` };
  switch (spec.type) {
    case "random_abtest":
      return { ok: true, route: abTestArm(spec.ratioA, opts.random) };
    case "epsilon_greedy":
    case "thompson_sampling": {
      const { arm } = await opts.env.BANDIT.getByName(banditObjectName(graph, node)).choose(banditParams(spec));
      return { ok: true, route: arm };
    }
    case "external": {
      const answer = await postStep({ url: spec.url!, body: input, timeoutMs: ROUTER_TIMEOUT_MS, retries: 0, tail: false, signal: new AbortController().signal }, opts.headers, opts.random);
      if (!answer.ok) return { ok: false, status: 502, cause: `router of node "${node}": ${answer.cause}` };
      if (answer.status < 200 || answer.status >= 300) return { ok: false, status: 502, cause: `router of node "${node}" answered ${answer.status}` };
      const parsed = parseJson(answer.body);
      const route = parsed.ok ? parseSeldonRoute(parsed.value) : null;
      if (route === null) return { ok: false, status: 502, cause: `router of node "${node}" did not answer with a route ({"data":{"ndarray":[[N]]}} or [N])` };
      return { ok: true, route };
    }
  }
}

export function banditParams(spec: NonNullable<CompiledNode["router"]>): BanditParams {
  if (spec.type === "epsilon_greedy") {
    return { kind: "epsilon_greedy", n_branches: spec.n_branches, epsilon: spec.epsilon, best_branch: spec.best_branch ?? null, seed: spec.seed ?? null, ...(spec.branch_names ? { branch_names: spec.branch_names } : {}) };
  }
  if (spec.type === "thompson_sampling") {
    return { kind: "thompson_sampling", n_branches: spec.n_branches, seed: spec.seed ?? null, ...(spec.branch_names ? { branch_names: spec.branch_names } : {}) };
  }
  throw new Error(`not a bandit router: ${spec.type}`);
}
