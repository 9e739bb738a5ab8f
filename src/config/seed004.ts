import { z } from "zod";
import type { ConfigInput } from "./schema";
import { AuthSchema, RoutingSchema } from "./schema";

/**
 * Seed 004's `config/routing.yaml`, accepted as it is:
 *
 *   routing_strategy: fixed
 *   routing_parameter: { local_fraction: 0.6, timeout: 2, health_check: 30 }
 *   local_deployment:  [{ endpoint: ..., models: [names] }]
 *   remote_deployment: [{ endpoint: ..., models: [names] }]
 *
 * `local_fraction` is the share of each model's traffic that goes to its local
 * endpoints, split evenly between them; the rest is split evenly between its remote
 * endpoints. A model with endpoints on one side only sends everything there.
 * Each model becomes a pool of the same name; endpoints become replicas `local-<i>` /
 * `remote-<i>` by their position in the list, so an endpoint keeps one id across models.
 */

export function isSeed004Document(document: unknown): boolean {
  return (
    document !== null &&
    typeof document === "object" &&
    ["routing_strategy", "routing_parameter", "local_deployment", "remote_deployment"].some((key) => key in document)
  );
}

const Deployment = z
  .object({
    endpoint: z.string().min(1),
    // The seed's own example leaves `models:` empty; that endpoint then serves nothing.
    models: z.array(z.string().min(1)).nullable().default([]),
    api_key: z.string().optional(),
  })
  .strict();

export const Seed004Schema = z
  .object({
    routing_strategy: z.literal("fixed").default("fixed"),
    routing_parameter: z
      .object({
        local_fraction: z.number().min(0, { error: "must be >= 0" }).max(1, { error: "must be <= 1" }).default(0.5),
        /** Seconds per try. */
        timeout: z.number().positive().optional(),
        /** Seconds between health checks, 0 = off. */
        health_check: z.number().min(0).default(0),
      })
      .strict()
      .default({ local_fraction: 0.5, health_check: 0 }),
    // Workers log through Workers Logs; a file path means nothing at the edge. Accepted so
    // the seed's file loads unchanged.
    logging: z.record(z.string(), z.unknown()).nullable().optional(),
    local_deployment: z.array(Deployment).nullable().default([]),
    remote_deployment: z.array(Deployment).nullable().default([]),
    // Switchyard's own sections may sit beside the seed's.
    routing: RoutingSchema.partial().optional(),
    auth: AuthSchema.optional(),
  })
  .strict();

export type Seed004 = z.output<typeof Seed004Schema>;

export function seed004ToNative(seed: Seed004): ConfigInput {
  const fraction = seed.routing_parameter.local_fraction;
  const sides = [
    { label: "local", deployments: seed.local_deployment ?? [], share: fraction },
    { label: "remote", deployments: seed.remote_deployment ?? [], share: 1 - fraction },
  ] as const;

  const modelNames = new Set<string>();
  for (const side of sides) for (const d of side.deployments) for (const m of d.models ?? []) modelNames.add(m);

  const pools: NonNullable<ConfigInput["pools"]> = {};
  const models: NonNullable<ConfigInput["models"]> = {};
  for (const model of modelNames) {
    const serving = sides.map((side) => ({
      ...side,
      endpoints: side.deployments.map((d, index) => ({ d, index })).filter(({ d }) => (d.models ?? []).includes(model)),
    }));
    const oneSided = serving.filter((side) => side.endpoints.length > 0).length === 1;
    const replicas = serving.flatMap((side) =>
      side.endpoints.map(({ d, index }) => ({
        id: `${side.label}-${index}`,
        url: d.endpoint,
        weight: (oneSided ? 1 : side.share) / side.endpoints.length,
        labels: [side.label],
        ...(d.api_key ? { api_key: d.api_key } : {}),
      })),
    );
    pools[model] = { replicas, health_check: seed.routing_parameter.health_check };
    models[model] = { pool: model };
  }

  const timeout = seed.routing_parameter.timeout;
  return {
    models,
    pools,
    routing: { ...(timeout !== undefined ? { try_timeout_ms: Math.round(timeout * 1000) } : {}), ...seed.routing },
    ...(seed.auth ? { auth: seed.auth } : {}),
  };
}
