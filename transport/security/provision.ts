/**
 * Provisioning of a deployment's principals at setup time: one nkey seed file (mode 0600) per
 * principal, its permissions derived from its role and scope, and the user list the server
 * config needs. What `custody init`-style setup calls, in one place.
 */
import { join } from "node:path";
import { writeNkeySeed } from "./nkey-seed.ts";
import { permissionsFor, type PrincipalSpec, type SubjectPermissions } from "./principal-permissions.ts";
import type { NkeyUser } from "./server-config.ts";

/** A principal as provisioned: its spec, seed file, public key and permissions. */
export type ProvisionedPrincipal = PrincipalSpec & {
  readonly seedFile: string;
  readonly publicKey: string;
  readonly permissions: SubjectPermissions;
};

/**
 * Writes a seed file `<role>-<id>.nk` in `dir` for each spec and derives its permissions. Throws
 * SecurityError `bad_credentials` when a seed file already exists, and the errors of
 * `permissionsFor` for a bad role or identifier.
 */
export function provisionPrincipals(dir: string, specs: readonly PrincipalSpec[]): ProvisionedPrincipal[] {
  return specs.map((s) => {
    const permissions = permissionsFor(s.role, s.id, s.scope as never);
    const creds = writeNkeySeed(join(dir, `${s.role}-${s.id}.nk`));
    return { ...s, seedFile: creds.seedFile, publicKey: creds.publicKey, permissions } as ProvisionedPrincipal;
  });
}

/** The server's user list for `principals` (labelled `<role> <id>`). */
export function nkeyUsers(principals: readonly ProvisionedPrincipal[]): NkeyUser[] {
  return principals.map((p) => ({ nkey: p.publicKey, permissions: p.permissions, label: `${p.role} ${p.id}` }));
}
