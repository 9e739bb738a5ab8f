/**
 * Names made of several parts (a model and a route, a graph and a node) joined with `/`,
 * where the parts may themselves hold `/`: each part's `%` and `/` are percent-escaped,
 * so `a/b` + `c` and `a` + `b/c` give two names. Parts without either keep their
 * spelling, so plain names read as they always did.
 */
export function joinNameParts(...parts: string[]): string {
  return parts.map((part) => part.replace(/%/g, "%25").replace(/\//g, "%2F")).join("/");
}
