/**
 * A secured bus for tests: a real nats-server whose config is rendered by transport/security/ (one nkey user
 * per principal with permissions derived from the subject scheme, TLS on the client port with
 * certificates made by openssl), and connections that log in as those principals.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  makeCertificates,
  nkeyUsers,
  provisionPrincipals,
  readNkeySeed,
  renderServerAuth,
  renderTlsBlock,
  type PrincipalSpec as SecurityPrincipalSpec,
  type Role,
  type SubjectPermissions,
} from "../../transport/security/index.ts";
import { NatsTransport, type PermissionViolation } from "../../transport/nats-transport.ts";
import { startNatsServer, type NatsServerHandle } from "../kit/nats-server.ts";

/** One principal to create: `key` names it in the test. */
export type PrincipalSpec = SecurityPrincipalSpec & { readonly key: string };

/** A principal as created: its seed file and permissions. */
export interface Principal {
  readonly role: Role;
  readonly id: string;
  readonly seedFile: string;
  readonly publicKey: string;
  readonly permissions: SubjectPermissions;
}

/** A connection of a principal, with the violations the server reported to it. */
export interface PrincipalConnection {
  readonly transport: NatsTransport;
  readonly violations: PermissionViolation[];
}

export interface SecuredBus {
  readonly server: NatsServerHandle;
  readonly url: string;
  readonly caFile: string;
  readonly dir: string;
  readonly principals: ReadonlyMap<string, Principal>;
  /** Connects as principal `key` (nkey + TLS + its inbox prefix). Closed by `stop()`. */
  connect(key: string, name?: string): Promise<PrincipalConnection>;
  /** Closes every connection made by `connect`, stops the server, deletes the files. */
  stop(): Promise<void>;
}

/** Starts a nats-server secured for `specs` (JetStream on). */
export async function startSecuredBus(specs: readonly PrincipalSpec[]): Promise<SecuredBus> {
  const dir = mkdtempSync(join(tmpdir(), "custody-secured-"));
  const certs = await makeCertificates(join(dir, "tls"), [{ name: "nats", hosts: ["127.0.0.1", "localhost"] }]);
  const provisioned = provisionPrincipals(dir, specs);
  const principals = new Map<string, Principal>(provisioned.map((p, i) => [specs[i]!.key, p]));
  const server = await startNatsServer({
    security: [renderServerAuth(nkeyUsers(provisioned)), renderTlsBlock({ ...certs.servers["nats"]!, caFile: certs.caFile }, { verify: false })].join("\n"),
  });
  const open: NatsTransport[] = [];
  return {
    server,
    url: server.url,
    caFile: certs.caFile,
    dir,
    principals,
    async connect(key, name) {
      const p = principals.get(key);
      if (p === undefined) throw new Error(`no principal ${key}`);
      const violations: PermissionViolation[] = [];
      const transport = await NatsTransport.connect({
        servers: server.url,
        name: name ?? key,
        nkeySeed: readNkeySeed(p.seedFile).seed,
        caFile: certs.caFile,
        inboxPrefix: p.permissions.inboxPrefix,
        maxReconnectAttempts: 0,
        onPermissionViolation: (v) => violations.push(v),
      });
      open.push(transport);
      return { transport, violations };
    },
    async stop() {
      for (const t of open.splice(0)) await t.close().catch(() => undefined);
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
