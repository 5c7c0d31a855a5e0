/**
 * Rendering of the security parts of a nats-server configuration: the `authorization` block
 * (one nkey user per principal, with its permissions) and `tls {}` blocks for client, cluster and
 * gateway listeners. Pure: returns text, writes nothing.
 */
import type { SubjectPermissions } from "./principal-permissions.ts";
import { SecurityError, SecurityErrorCode } from "./security-error.ts";

/** One NATS user: a principal's public nkey (`U...`) and its permissions. */
export interface NkeyUser {
  /** Public user nkey, 56 characters starting with `U`. */
  readonly nkey: string;
  readonly permissions: SubjectPermissions;
  /** Shown as a comment above the user entry (e.g. `holder h1`). */
  readonly label?: string;
}

/** The files of a TLS listener (server side). */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

const PUBLIC_USER_NKEY = /^U[A-Z2-7]{55}$/;

// Config strings are double-quoted (JSON escaping is valid there), so `$JS.API...` is a subject,
// not a variable reference.
const q = (s: string) => JSON.stringify(s);
const list = (xs: readonly string[]) => `[${xs.map(q).join(", ")}]`;

/**
 * The `authorization { users = [...] }` block for `users`. With it, a connection that presents no
 * listed nkey is refused (there is no `no_auth_user`). Throws SecurityError `invalid_principal`
 * for a malformed or repeated nkey.
 */
export function renderServerAuth(users: readonly NkeyUser[], opts: { timeoutSec?: number } = {}): string {
  const seen = new Set<string>();
  const lines = ["authorization {", `  timeout: ${opts.timeoutSec ?? 2}`, "  users = ["];
  for (const u of users) {
    if (!PUBLIC_USER_NKEY.test(u.nkey)) {
      throw new SecurityError(SecurityErrorCode.InvalidPrincipal, `not a public user nkey: ${JSON.stringify(u.nkey)}`, {
        nkey: u.nkey,
        label: u.label,
      });
    }
    if (seen.has(u.nkey))
      throw new SecurityError(SecurityErrorCode.InvalidPrincipal, `nkey ${u.nkey} is listed twice`, {
        nkey: u.nkey,
        label: u.label,
      });
    seen.add(u.nkey);
    const p = u.permissions;
    if (u.label !== undefined) lines.push(`    # ${u.label.replace(/[\r\n]/g, " ")}`);
    lines.push(
      `    {`,
      `      nkey: ${q(u.nkey)}`,
      `      permissions: {`,
      `        publish: { allow: ${list(p.publish)} }`,
      `        subscribe: { allow: ${list(p.subscribe)} }`,
      `        allow_responses: ${p.allowResponses}`,
      `      }`,
      `    }`,
    );
  }
  lines.push("  ]", "}");
  return lines.join("\n");
}

/** The security text of one server of a supercluster region (see `regionConfig` in transport/). */
export interface RegionSecurityText {
  /** Top level: the `authorization` block and the client `tls {}` block. */
  readonly top: string;
  /** Inside `cluster {}`: its `tls {}` (peer certificates verified). */
  readonly cluster: string;
  /** Inside `gateway {}`: its `tls {}` (peer certificates verified). */
  readonly gateway: string;
}

/**
 * Everything a server needs to run secured: nkey users with their permissions, TLS for clients
 * (no client certificate asked), and TLS with verified peer certificates on routes and gateways.
 * Same errors as `renderServerAuth`.
 */
export function renderRegionSecurity(users: readonly NkeyUser[], files: TlsFiles): RegionSecurityText {
  return {
    top: [renderServerAuth(users), renderTlsBlock(files, { verify: false })].join("\n"),
    cluster: renderTlsBlock(files, { verify: true, indent: "  " }),
    gateway: renderTlsBlock(files, { verify: true, indent: "  " }),
  };
}

/**
 * A `tls { ... }` block. For client listeners `verify` is false (clients prove who they are with
 * their nkey); cluster and gateway listeners verify the peer's certificate against the CA.
 */
export function renderTlsBlock(
  files: TlsFiles,
  opts: { verify: boolean; indent?: string; timeoutSec?: number },
): string {
  const i = opts.indent ?? "";
  return [
    `${i}tls {`,
    `${i}  cert_file: ${q(files.certFile)}`,
    `${i}  key_file: ${q(files.keyFile)}`,
    `${i}  ca_file: ${q(files.caFile)}`,
    `${i}  verify: ${opts.verify}`,
    `${i}  timeout: ${opts.timeoutSec ?? 2}`,
    `${i}}`,
  ].join("\n");
}
