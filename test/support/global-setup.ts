import type { TestProject } from "vitest/node";
import { startFleetControl } from "../../tools/fakes/fleet-control";

/** One fake-server fleet for the whole run; test files reach it via inject("fleetUrl"). */
export default async function setup(project: TestProject) {
  const fleet = await startFleetControl();
  // ProvidedContext.fleetUrl is declared in test/env.d.ts, which this Node-typed program
  // cannot include (it pulls in workers types), so the key is typed here by hand.
  (project as unknown as { provide(key: "fleetUrl", value: string): void }).provide("fleetUrl", fleet.url);
  return () => fleet.close();
}
