import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CA_FILE, NKEY_SEED_FILE } from "../../policies/deploy/index.ts";
import { natsRoleSchema, readOperatorConfig } from "../../actors/runtime/index.ts";
import { readNkeySeed } from "../../transport/security/index.ts";
import { NatsTransport, type PermissionViolation } from "../../transport/index.ts";
import type { SecuredNetwork } from "./secured-network.ts";

/** A connection of the attacker, logged in with a principal's credentials taken from the deployment's files. */
export interface AttackerConnection {
  readonly transport: NatsTransport;
  /** What the server refused this connection (publish or subscription). */
  readonly violations: PermissionViolation[];
}

/**
 * Connects to `region` with the credentials of role instance `instance` (or `operator`): the seed,
 * inbox prefix and CA its own config names. Stolen credentials, as far as the attack goes.
 */
export async function connectAs(net: SecuredNetwork, instance: string, region: string): Promise<AttackerConnection> {
  const nats =
    instance === "operator"
      ? readOperatorConfig(net.operatorConfig)
      : natsRoleSchema.parse(
          (JSON.parse(readFileSync(join(net.roleDir(instance), "config.json"), "utf8")) as { nats: unknown }).nats,
        );
  const violations: PermissionViolation[] = [];
  const transport = await NatsTransport.connect({
    servers: net.urls[region]!,
    name: `attacker-as-${instance}`,
    maxReconnectAttempts: 0,
    nkeySeed: readNkeySeed(nats.credentials?.nkeySeedFile ?? join(net.roleDir(instance), NKEY_SEED_FILE)).seed,
    caFile: nats.tls?.caFile ?? join(net.roleDir(instance), CA_FILE),
    ...(nats.credentials?.inboxPrefix !== undefined ? { inboxPrefix: nats.credentials.inboxPrefix } : {}),
    onPermissionViolation: (v) => violations.push(v),
  });
  return { transport, violations };
}
