import { NatsTransport } from "../transport/nats-transport.ts";
import type { NatsRoleConfig } from "./role-config.ts";

/** Connects a role's transport with its configured reconnect policy; `lost` resolves if the connection closes for good. */
export async function connectRole(nats: NatsRoleConfig, name: string): Promise<{ transport: NatsTransport; lost: Promise<void> }> {
  const transport = await NatsTransport.connect({
    servers: nats.servers,
    name,
    ...(nats.maxReconnectAttempts !== undefined ? { maxReconnectAttempts: nats.maxReconnectAttempts } : {}),
    ...(nats.reconnectTimeWaitMs !== undefined ? { reconnectTimeWait: nats.reconnectTimeWaitMs } : {}),
  });
  const lost = new Promise<void>((resolve) => transport.onConnection((e) => e === "closed" && resolve()));
  return { transport, lost };
}
