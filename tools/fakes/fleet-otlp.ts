/**
 * Fleet control's fake OTLP collectors (tools/fakes/fake-otlp.ts), for tests inside
 * workerd, under /collectors (the routes every kind has: ./fleet-servers.ts):
 *
 *   POST   /collectors                {id?, behaviour?: FakeCollectorBehaviour}
 *   PUT    /collectors/:id/behaviour  FakeCollectorBehaviour (replaces the current one)
 *   GET    /collectors/:id/stats      -> CollectorStats (every export received)
 *   POST   /collectors/:id/reset      forgets the exports
 *   DELETE /collectors/:id            closes it, cutting held connections
 */
import { startFakeCollector, type FakeCollectorBehaviour } from "./fake-otlp";
import { asObject } from "./fleet-http";
import { serverFleet, type ServerFleet } from "./fleet-servers";

export function collectorFleet(): ServerFleet {
  return serverFleet({
    path: "/collectors",
    noun: "collector",
    idPrefix: "collector",
    start: (_id, request) => startFakeCollector({ behaviour: asObject(request.behaviour) as FakeCollectorBehaviour }),
    actions: { "PUT /behaviour": (collector, body) => collector.setBehaviour(asObject(body) as FakeCollectorBehaviour) },
  });
}
