import type { ConfigIssue } from "./issues";

/**
 * What a config may hold that must never be shown: in config errors (CLI `validate`,
 * `PUT /admin/config`, `/routing`'s `rejected`, the `config_rejected` log line) or in
 * `/routing`. The rule:
 *
 * - Every value a `${VAR}` took from the env is shown as `${VAR}`, wherever it sits
 *   (api_key, URL, id, client key...). A default (`${VAR:-text}`) is config text and shows
 *   as itself.
 * - Secret-bearing literals are shown as `(redacted)`: any string under an `api_key`,
 *   `client_keys`, `auth` or `headers` field (of the top-level `auth` block's named `keys`,
 *   only the `key`: their names and teams name principals), the userinfo of any URL, and the ADMIN_TOKEN.
 * - URLs are shown as written, with `${VAR}` unresolved, without userinfo, query or
 *   fragment. A URL that still holds a secret after that (one derived from a secret some
 *   other way) shows as `(redacted)`.
 *
 * Messages are scrubbed by value, so a value that happens to match other text is replaced
 * there too: a message may read oddly, it never leaks. A value shorter than
 * SHORT_VALUE_CHARS is replaced only where it stands alone (not inside a longer word), so
 * a pool named `p` by `${POOL}` does not eat every "p" of every message.
 */

const SECRET_FIELDS = new Set(["api_key", "client_keys", "auth", "headers"]); // auth: a RouteWise quota_source's usage API key (and the client_keys block); headers: telemetry.otlp's
const USERINFO = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)@/;
const URL_PARTS = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)([^?#]*)/;
export const REDACTED = "(redacted)";

/** A configured URL as it may be stored (`Redactions.atRest`); undefined: as it is. */
export type UrlAtRest = (resolved: string) => string | undefined;
export const SHORT_VALUE_CHARS = 8;

export class Redactions {
  /** Each secret, and the forms it may take in text (JSON-escaped, URL-encoded) -> what is shown instead. */
  readonly #replacements = new Map<string, string>();
  readonly #written: Map<string, string>;
  #pattern: RegExp | null | undefined;

  constructor(secrets: Iterable<[value: string, shownAs: string]> = [], written: Map<string, string> = new Map()) {
    for (const [value, shownAs] of secrets) this.#add(value, shownAs);
    this.#written = written;
  }

  static readonly NONE = new Redactions();

  /** Whether there is anything to replace: an answer read whole only to scrub it is not read without. */
  get any(): boolean {
    return this.#replacements.size > 0;
  }

  /** Every secret in `text` replaced by what is shown for it. */
  text(text: string): string {
    const pattern = this.#regex();
    return pattern === null ? text : text.replace(pattern, (match) => this.#replacements.get(match) ?? REDACTED);
  }

  issues(issues: ConfigIssue[]): ConfigIssue[] {
    // Paths are made of keys, and keys are never substituted: only messages can hold a value.
    return this.#replacements.size === 0 ? issues : issues.map((issue) => ({ ...issue, message: this.text(issue.message) }));
  }

  /** A configured (resolved) URL as `/routing` shows it; see the rule above. */
  url(resolved: string): string {
    const written = this.#written.get(resolved) ?? this.#derivedFrom(resolved);
    const shown = written !== undefined ? withoutExtras(written) : plainUrl(resolved);
    return this.text(shown) === shown ? shown : REDACTED;
  }

  /**
   * A configured string as it may be stored: as written, each env value shown as its
   * `${VAR}` (a default that was used shows as itself), and a URL without its userinfo
   * (a password written in the config is a secret too); undefined when it holds neither,
   * so the resolved string is already fit to store.
   */
  atRest(resolved: string): string | undefined {
    const written = this.#written.get(resolved);
    const stored = written ?? resolved;
    const userinfo = USERINFO.exec(stored);
    return userinfo ? stored.replace(`${userinfo[1]}@`, "") : written;
  }

  /** A URL built from a configured one plus a path (a graph service's predict URL). */
  #derivedFrom(resolved: string): string | undefined {
    let best: [string, string] | undefined;
    for (const [value, written] of this.#written) {
      const base = value.replace(/\/+$/, "");
      if (base !== "" && resolved.startsWith(base) && (best === undefined || base.length > best[0].length)) best = [base, written];
    }
    return best && `${best[1].replace(/\/+$/, "")}${resolved.slice(best[0].length)}`;
  }

  #add(value: string, shownAs: string): void {
    if (value === "") return;
    for (const form of [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), encodeURI(value)]) {
      if (!this.#replacements.has(form)) this.#replacements.set(form, shownAs);
    }
    this.#pattern = undefined;
  }

  #regex(): RegExp | null {
    if (this.#pattern === undefined) {
      const forms = [...this.#replacements.keys()].sort((a, b) => b.length - a.length); // longest first
      const alone = (form: string) => `(?<![A-Za-z0-9_])${escapeRegExp(form)}(?![A-Za-z0-9_])`;
      this.#pattern = forms.length === 0 ? null : new RegExp(forms.map((f) => (f.length < SHORT_VALUE_CHARS ? alone(f) : escapeRegExp(f))).join("|"), "g");
    }
    return this.#pattern;
  }
}

/**
 * The redactions for one config: its env values (from substitution), the secret-bearing
 * literals in its documents, and the admin token from `vars`.
 */
export function redactionsFor(
  documents: readonly unknown[],
  envValues: ReadonlyMap<string, string>,
  written: Map<string, string>,
  vars: Record<string, unknown>,
): Redactions {
  const secrets: [string, string][] = [...envValues].map(([value, name]) => [value, `\${${name}}`]);
  for (const document of documents) {
    if (document === null || typeof document !== "object" || Array.isArray(document)) {
      collectLiterals(document, false, secrets);
      continue;
    }
    // The top-level auth block's named keys: their key is secret, their names, teams and notes are not (they name principals in headers and limits).
    const { auth, ...rest } = document as Record<string, unknown>;
    collectLiterals(rest, false, secrets);
    if (auth !== null && typeof auth === "object" && !Array.isArray(auth)) {
      const { keys, ...other } = auth as Record<string, unknown>;
      collectLiterals(other, true, secrets);
      if (Array.isArray(keys)) for (const entry of keys) collectLiterals((entry as { key?: unknown } | null)?.key, true, secrets);
      else collectLiterals(keys, true, secrets);
    } else collectLiterals(auth, true, secrets);
  }
  if (typeof vars.ADMIN_TOKEN === "string") secrets.push([vars.ADMIN_TOKEN, REDACTED]);
  return new Redactions(secrets, written);
}

function collectLiterals(node: unknown, secretField: boolean, out: [string, string][]): void {
  if (typeof node === "string") {
    if (secretField) out.push([node, REDACTED]);
    const userinfo = USERINFO.exec(node)?.[1];
    if (userinfo !== undefined) {
      out.push([userinfo, REDACTED]);
      for (const part of userinfo.split(":")) out.push([part, REDACTED]);
    }
  } else if (Array.isArray(node)) {
    for (const item of node) collectLiterals(item, secretField, out);
  } else if (node !== null && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) collectLiterals(value, secretField || SECRET_FIELDS.has(key), out);
  }
}

/** Scheme, host and path of a URL as written: userinfo, query and fragment dropped. */
function withoutExtras(text: string): string {
  const parts = URL_PARTS.exec(text);
  if (!parts) return text.replace(/[?#].*$/, "");
  const authority = parts[2]!;
  return `${parts[1]}${authority.slice(authority.lastIndexOf("@") + 1)}${parts[3]}`;
}

/** A URL with no secret in it: origin and path, as the router has always shown it. */
function plainUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.origin}${url.pathname === "/" ? "" : url.pathname}`;
  } catch {
    return REDACTED;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}
