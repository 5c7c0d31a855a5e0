/**
 * Base class of every typed error in the project. Callers branch on `code` (or on the
 * subclass), never on message text. `detail` carries the offending value or field so a
 * log line or a CLI error can name it.
 */
export class CustodyError extends Error {
  readonly code: string;
  readonly detail: Record<string, unknown>;

  constructor(code: string, message: string, detail: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.detail = detail;
  }
}

/** True when `err` is a CustodyError, optionally with the given code. */
export function isCustodyError(err: unknown, code?: string): err is CustodyError {
  return err instanceof CustodyError && (code === undefined || err.code === code);
}
