/**
 * Fleet control's fake vLLM replicas (tools/fakes/fake-vllm.ts), for tests inside workerd,
 * under /vllm-servers (the routes every kind has: ./fleet-servers.ts):
 *
 *   POST   /vllm-servers              {id?, options?: FakeVllmOptions}; 400 naming a bad option
 *   GET    /vllm-servers/:id/stats    -> VllmStats (counters, KV, LoRA, per-request records)
 *   PUT    /vllm-servers/:id/tuning   FakeVllmTuning: costs and health, merged into the current ones
 *   POST   /vllm-servers/:id/reset    clears records (the cache and the counters stay, as on a real replica)
 *   DELETE /vllm-servers/:id          closes the replica, cutting its requests
 */
import { startFakeVllm, type FakeVllmOptions, type FakeVllmTuning } from "./fake-vllm";
import { asObject } from "./fleet-http";
import { serverFleet, type ServerFleet } from "./fleet-servers";

export function vllmFleet(): ServerFleet {
  return serverFleet({
    path: "/vllm-servers",
    noun: "vllm server",
    idPrefix: "vllm",
    start: (id, request) => startFakeVllm({ ...(asObject(request.options) as FakeVllmOptions), id, port: 0 }),
    actions: { "PUT /tuning": (replica, body) => replica.tune(asObject(body) as FakeVllmTuning) },
  });
}
