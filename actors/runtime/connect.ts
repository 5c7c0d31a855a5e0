import { readNkeySeed } from "../../transport/security/index.ts";
import { NatsTransport } from "../../transport/index.ts";
import type { NatsRoleConfig } from "./role-config.ts";

/**
 * Connects a role's transport with its configured reconnect policy and, when configured, its nkey
 * credentials and TLS trust; `lost` resolves if the connection closes for good. Throws
 * SecurityError `bad_credentials` for a seed file that is unreadable or not mode 0600.
 */
export async function connectRole(
  nats: NatsRoleConfig,
  name: string,
): Promise<{ transport: NatsTransport; lost: Promise<void> }> {
  const creds = nats.credentials;
  const transport = await NatsTransport.connect({
    servers: nats.servers,
    name,
    ...(nats.maxReconnectAttempts !== undefined ? { maxReconnectAttempts: nats.maxReconnectAttempts } : {}),
    ...(nats.reconnectTimeWaitMs !== undefined ? { reconnectTimeWait: nats.reconnectTimeWaitMs } : {}),
    ...(creds !== undefined ? { nkeySeed: readNkeySeed(creds.nkeySeedFile).seed } : {}),
    ...(creds?.inboxPrefix !== undefined ? { inboxPrefix: creds.inboxPrefix } : {}),
    ...(nats.tls !== undefined ? { caFile: nats.tls.caFile } : {}),
  });
  const lost = new Promise<void>((resolve) => transport.onConnection((e) => e === "closed" && resolve()));
  return { transport, lost };
}
