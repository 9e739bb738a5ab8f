/**
 * Raised by compilePath for a path this evaluator rejects: malformed syntax, or GJSON
 * syntax it does not implement. A condition must never silently evaluate to "no match"
 * because of a typo, so config validation compiles every path up front and reports this.
 */
export class GjsonSyntaxError extends Error {
  override readonly name = "GjsonSyntaxError";

  constructor(
    message: string,
    /** 0-based offset into the whole path string where the problem was found. */
    readonly position: number,
  ) {
    super(`${message} (at offset ${position})`);
  }
}
