import { CustodyError } from "../../core/index.ts";

/** Why a security setup step failed. Callers branch on these, never on message text. */
export const SecurityErrorCode = {
  /** A principal or its scope cannot be turned into permissions (bad identifier, missing scope). */
  InvalidPrincipal: "invalid_principal",
  /** A credentials file is missing, unreadable, not an nkey seed, or readable by others than its owner. */
  BadCredentials: "bad_credentials",
  /** `openssl` failed while making the CA or a certificate. */
  CertificateFailed: "certificate_failed",
} as const;
export type SecurityErrorCode = (typeof SecurityErrorCode)[keyof typeof SecurityErrorCode];

/** A typed security setup failure; `detail` names the principal, file or command involved. */
export class SecurityError extends CustodyError {
  declare readonly code: SecurityErrorCode;

  constructor(
    code: SecurityErrorCode,
    message: string,
    detail: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, detail, options);
  }
}
