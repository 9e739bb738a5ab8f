/** The RouteWise agents' exchange interval (src/app/state/state-client.ts). */
export const ROUTEWISE_SYNC_MS = 1_000; // views of envelopes, circuits, quotas and slots are at most a second old while traffic flows (plus one round trip)
