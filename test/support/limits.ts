/** The limits tests' shared fixture: the test key as a named principal over one priced pool model. */
export const KEY = "sk-from-secret"; // TEST_CLIENT_KEY in vitest.config.ts
export const USAGE = { prompt_tokens: 10, completion_tokens: 5 }; // 15 tokens; at 1,000 / 2,000 per million: 0.02 per answer

/** A pool model `m` (priced 1,000 / 2,000 per million tokens), the test key named `name` in team t1, and the given limits. */
export function limitedConfig(url: string, name: string, limits: string, extra = "") {
  return `models:
  m: { pool: p, pricing: { input: 1000, output: 2000 } }
pools:
  p: { replicas: [{ id: r, url: "${url}" }] }
auth:
  keys:
    - { name: ${name}, key: "\${TEST_CLIENT_KEY}", team: t1 }
limits:
${limits}
${extra}`;
}

/** A further config document: InferenceGraph `name`, one Sequence step that calls pool `p`'s chat completions. */
export const poolStepGraph = (name: string) => `---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: ${name}
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
      - { pool: p, path: /v1/chat/completions }
`;

/**
 * Waits for the next UTC minute unless `ms` of this one are left: per-minute windows read
 * across a minute's end would be two windows. For tests whose router runs in another
 * isolate or process, whose clock the test cannot shift (earlyInMinute in state.ts can).
 */
export async function untilMinuteHas(ms: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((resolve) => setTimeout(resolve, left + 100));
}
