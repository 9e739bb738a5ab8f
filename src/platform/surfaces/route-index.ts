import type { SurfaceGroup, SurfaceRoute, UnknownPaths } from "./route";

export type Match =
  | { kind: "route"; route: SurfaceRoute; params: string[] }
  | { kind: "wrong_method"; group: SurfaceGroup; allow: readonly string[] }
  | { kind: "unknown"; group: SurfaceGroup; message: string };

const NO_PARAMS: string[] = [];

/**
 * The declared routes, indexed: plain paths in a map (one lookup, the hot path), patterns
 * in declaration order, unknown-path owners by prefix. A path that some route serves with
 * another method is a 405 naming the methods that route takes; a path no route serves is
 * a 404 from the group that owns it.
 */
export class RouteIndex {
  readonly #exact = new Map<string, SurfaceRoute>();
  readonly #patterns: SurfaceRoute[] = [];
  readonly #unknown: UnknownPaths[];

  constructor(routes: readonly SurfaceRoute[], unknown: readonly UnknownPaths[]) {
    for (const r of routes) {
      if (typeof r.path !== "string") this.#patterns.push(r);
      else if (this.#exact.has(r.path)) throw new Error(`route ${r.path} is declared twice`);
      else this.#exact.set(r.path, r);
    }
    this.#unknown = [...unknown].sort((a, b) => b.prefix.length - a.prefix.length); // the longest prefix owns a path
    if (!this.#unknown.some((u) => u.prefix === "/")) throw new Error("unknown paths need an owner for /");
  }

  match(method: string, path: string): Match {
    const exact = this.#exact.get(path);
    if (exact) return exact.methods.includes(method) ? { kind: "route", route: exact, params: NO_PARAMS } : { kind: "wrong_method", group: exact.group, allow: exact.methods };
    let wrongMethod: SurfaceRoute | undefined;
    for (const r of this.#patterns) {
      const found = typeof r.path === "string" ? null : r.path.regex.exec(path);
      if (!found) continue;
      if (r.methods.includes(method)) return { kind: "route", route: r, params: found.slice(1) };
      wrongMethod ??= r;
    }
    if (wrongMethod) return { kind: "wrong_method", group: wrongMethod.group, allow: wrongMethod.methods };
    const owner = this.#unknown.find((u) => u.prefix === "/" || path === u.prefix || path.startsWith(`${u.prefix}/`))!;
    return { kind: "unknown", group: owner.group, message: owner.message(path) };
  }
}
