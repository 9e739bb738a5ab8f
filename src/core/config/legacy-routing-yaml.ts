import * as z from "zod/mini";
import type { ConfigInput } from "./schema";
import { AuthSchema, MIN_HEALTH_CHECK_S, RoutingSchema } from "./schema";
import { atMost, MAX_PERIOD_S, MAX_REQUEST_MS } from "./bounds";

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
  .strictObject({
    endpoint: z.string().check(z.minLength(1)),
    // The seed's own example leaves `models:` empty; that endpoint then serves nothing.
    models: z._default(z.nullable(z.array(z.string().check(z.minLength(1)))), []),
    api_key: z.optional(z.string()),
  });

export const Seed004Schema = z
  .strictObject({
    routing_strategy: z._default(z.literal("fixed"), "fixed"),
    routing_parameter: z._default(
      z.strictObject({
        local_fraction: z._default(z.number().check(z.minimum(0, { error: "must be >= 0" }), z.maximum(1, { error: "must be <= 1" })), 0.5),
        /** Seconds per try. */
        timeout: z.optional(z.number().check(z.positive(), atMost(MAX_REQUEST_MS / 1000, "s: an hour"))),
        /** Seconds between health checks, 0 = off. */
        health_check: z._default(z.number().check(z.refine((s) => s === 0 || s >= MIN_HEALTH_CHECK_S, { error: `must be 0 (off) or >= ${MIN_HEALTH_CHECK_S}` }), atMost(MAX_PERIOD_S, "s: a day")), 0),
      }),
      { local_fraction: 0.5, health_check: 0 },
    ),
    // Workers log through Workers Logs; a file path means nothing at the edge. Accepted so
    // the seed's file loads unchanged.
    logging: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
    local_deployment: z._default(z.nullable(z.array(Deployment)), []),
    remote_deployment: z._default(z.nullable(z.array(Deployment)), []),
    // Switchyard's own sections may sit beside the seed's. `routing` is taken as written and
    // checked with the native config: parsed here, its defaults (try_timeout_ms 60 s among
    // them) would be filled in and override the seed's `timeout`.
    routing: z.optional(z.record(z.string(), z.unknown())),
    auth: z.optional(AuthSchema),
  });

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
    routing: { ...(timeout !== undefined ? { try_timeout_ms: Math.round(timeout * 1000) } : {}), ...(seed.routing as ConfigInput["routing"]) },
    ...(seed.auth ? { auth: seed.auth } : {}),
  };
}
