/** What fleet control's route handlers share: errors that carry their status, body checks. */
export class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export function asObject(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new HttpError(400, "expected a JSON object");
  return value as Record<string, unknown>;
}
