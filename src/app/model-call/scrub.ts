import type { Redactions } from "../../core/config/redact";

/**
 * A plan's `scrubError` for a config: its secrets shown as `${VAR}` in the error answers
 * clients get, since an upstream may echo the key it was sent (docs/security.md). None
 * when the config has no secret to show, so no error answer is read whole for nothing.
 */
export function scrubbing(redactions: Redactions): { scrubError?: (text: string) => string } {
  return redactions.any ? { scrubError: (text) => redactions.text(text) } : {};
}
