import type { Config } from "../config/schema";
import { clientKeyName } from "../config/limits-schema";

/** Who a request is charged to: a configured key by name (never the key itself), its team, and an end user a trusted key names. */
export interface Principal {
  key: string;
  team?: string;
  /** `X-Switchyard-Tenant` from a key with trusted_tenant_header. */
  tenant?: string;
}

/** A configured key as the preamble matches it: its principal and whether it may name tenants. */
export interface KeyPrincipal {
  principal: Principal;
  trustsTenantHeader: boolean;
}

export const TENANT_HEADER = "x-switchyard-tenant";
const TENANT = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/; // a name fit for headers, logs and object names

/** A name an end user can have: in X-Switchyard-Tenant, and so in a per-tenant bucket's name. */
export const isTenantName = (name: string): boolean => TENANT.test(name);

/**
 * The principals of a config's keys, in the order of the digests the loader makes from
 * them (`keyEntries`): every `client_keys` entry, unnamed (named by its place), then
 * every `auth.keys` entry.
 */
export function keyPrincipals(config: Config): KeyPrincipal[] {
  return [
    ...config.auth.client_keys.map((_, i) => ({ principal: { key: clientKeyName(i) }, trustsTenantHeader: false })),
    ...config.auth.keys.map((k) => ({ principal: { key: k.name, ...(k.team !== undefined && { team: k.team }) }, trustsTenantHeader: k.trusted_tenant_header })),
  ];
}

/** The key strings, in the order of keyPrincipals. */
export function keyEntries(config: Config): string[] {
  return [...config.auth.client_keys, ...config.auth.keys.map((k) => k.key)];
}

/**
 * The end user a trusted key names, when it names a valid one; a key that is not trusted
 * cannot name one (the header is ignored), so no client can move its use onto another's name.
 */
export function withTenant(key: KeyPrincipal, header: string | null): Principal | { problem: string } {
  if (!key.trustsTenantHeader || header === null) return key.principal;
  const tenant = header.trim();
  if (!isTenantName(tenant)) return { problem: "X-Switchyard-Tenant must be 1-128 characters of letters, digits and . _ : @ -, starting with a letter or digit" };
  return { ...key.principal, tenant };
}
