/**
 * Fleet control's fake metered providers (tools/fakes/fake-provider.ts), for tests inside
 * workerd, under /providers (the routes every kind has: ./fleet-servers.ts):
 *
 *   POST   /providers                {id?, behaviour?: FakeProviderBehaviour}; 400 naming a bad field
 *   PUT    /providers/:id/behaviour  FakeProviderBehaviour (replaces the current one; restarts the PRNG)
 *   PUT    /providers/:id/used       {used: n}: tokens used in the current quota window
 *   GET    /providers/:id/stats      -> FakeProviderStats
 *   POST   /providers/:id/reset      clears stats (quota use and the prompt cache stay)
 *   DELETE /providers/:id            closes the provider, cutting its requests
 */
import { startFakeProvider, type FakeProviderBehaviour } from "./fake-provider";
import { asObject } from "./fleet-http";
import { serverFleet, type ServerFleet } from "./fleet-servers";

export function providerFleet(): ServerFleet {
  return serverFleet({
    path: "/providers",
    noun: "provider",
    idPrefix: "provider",
    start: (id, request) => startFakeProvider({ id, behaviour: asObject(request.behaviour) as FakeProviderBehaviour }),
    actions: {
      "PUT /behaviour": (provider, body) => provider.setBehaviour(asObject(body) as FakeProviderBehaviour),
      "PUT /used": (provider, body) => provider.setUsed(asObject(body).used as number),
    },
  });
}
