import { CustodyError } from "../core/index.ts";

/** Why a transport operation failed. Callers branch on these, never on message text. */
export const TransportErrorCode = {
  /** No reply arrived within the request timeout. */
  Timeout: "timeout",
  /** Nobody was subscribed to the request subject. */
  NoResponders: "no_responders",
  /** The transport (connection) is closed or draining. */
  Closed: "closed",
  /** The subject (or queue name) is not a valid subject. */
  InvalidSubject: "invalid_subject",
  /** Any other failure of the underlying connection (e.g. disconnected mid-request). */
  Failed: "failed",
} as const;
export type TransportErrorCode = (typeof TransportErrorCode)[keyof typeof TransportErrorCode];

/** A typed transport failure; `detail.subject` names the subject involved. */
export class TransportError extends CustodyError {
  declare readonly code: TransportErrorCode;

  constructor(
    code: TransportErrorCode,
    message: string,
    detail: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, detail, options);
  }
}

/** True when `err` is a TransportError, optionally with the given code. */
export function isTransportError(err: unknown, code?: TransportErrorCode): err is TransportError {
  return err instanceof TransportError && (code === undefined || err.code === code);
}
