import { errors as natsErrors } from "@nats-io/transport-node";
import { CustodyError } from "../core/index.ts";

/** Why a first connect to NATS failed. Callers branch on these, never on message text. */
export const NatsConnectErrorCode = {
  /** Nothing listens on the port (TCP refused). */
  Refused: "connection_refused",
  /** No NATS greeting (INFO) within the connect timeout: not a NATS client port, or unreachable. */
  Timeout: "connect_timeout",
  /** The server's TLS certificate did not verify against the trusted CAs. */
  TlsUntrusted: "tls_untrusted",
  /** The server refused the credentials (or their absence). */
  AuthFailed: "auth_failed",
  /** Any other failure of the first connect. */
  Failed: "connect_failed",
} as const;
export type NatsConnectErrorCode = (typeof NatsConnectErrorCode)[keyof typeof NatsConnectErrorCode];

/**
 * A first connect that failed, naming the server URL(s) tried. `reason` is the short cause alone
 * (`connection refused`), for callers that list several URLs with their own reasons.
 */
export class NatsConnectError extends CustodyError {
  declare readonly code: NatsConnectErrorCode;
  readonly reason: string;

  constructor(code: NatsConnectErrorCode, servers: readonly string[], reason: string, options?: { cause?: unknown }) {
    super(code, `cannot connect to ${servers.join(", ")}: ${reason}`, { servers: [...servers], reason }, options);
    this.reason = reason;
  }
}

/** Node's certificate-verification failure codes (an untrusted or mismatched server certificate). */
const TLS_VERIFY_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** What the connect was given to trust the server and to be trusted by it (named when either fails). */
export interface ConnectTrust {
  readonly caFile?: string | undefined;
  readonly credentials?: boolean | undefined;
}

/** Maps what nats.js threw for a failed first connect to a NatsConnectError naming `servers`. */
export function toConnectError(
  err: unknown,
  servers: readonly string[],
  timeoutMs: number,
  trust: ConnectTrust = {},
): NatsConnectError {
  if (err instanceof NatsConnectError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : undefined;
  const code = (err as { code?: unknown } | undefined)?.code ?? (cause as { code?: unknown } | undefined)?.code;
  const opts = { cause: err };
  if (code === "ECONNREFUSED")
    return new NatsConnectError(
      NatsConnectErrorCode.Refused,
      servers,
      "connection refused (is nats-server listening there?)",
      opts,
    );
  if (err instanceof natsErrors.TimeoutError) {
    // A port that accepts TCP but never sends NATS's INFO line (a monitoring port speaks HTTP) ends here too.
    return new NatsConnectError(
      NatsConnectErrorCode.Timeout,
      servers,
      `no NATS server answered within ${timeoutMs} ms (is it the server's client port, not its monitoring or ` +
        `cluster port?)`,
      opts,
    );
  }
  if (typeof code === "string" && TLS_VERIFY_CODES.has(code)) {
    const against =
      trust.caFile !== undefined ? `checked against the CA in ${trust.caFile}` : "no CA to trust was given";
    // Node 24 appends a hint to run Node with --use-system-ca; the way out here is --ca or --operator-config.
    const reason = message.split(";")[0]!.trim();
    return new NatsConnectError(
      NatsConnectErrorCode.TlsUntrusted,
      servers,
      `the server's TLS certificate is not trusted (${reason}; ${against})`,
      opts,
    );
  }
  if (err instanceof natsErrors.AuthorizationError || err instanceof natsErrors.UserAuthenticationExpiredError) {
    const refused =
      trust.credentials === true
        ? "the server refused the credentials"
        : "the server wants credentials and none were given";
    return new NatsConnectError(NatsConnectErrorCode.AuthFailed, servers, `${refused} (${message})`, opts);
  }
  return new NatsConnectError(NatsConnectErrorCode.Failed, servers, message, opts);
}
