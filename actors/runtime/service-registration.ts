import { Svcm, type Service, type ServiceClient, type ServiceStats } from "@nats-io/services";
import type { NatsConnection } from "../../transport/index.ts";

/**
 * Every `custody run` process is a NATS service (the `$SRV.PING|INFO|STATS` conventions of
 * `@nats-io/services`, the requests `nats micro ls|info|stats` send), so `custody ps` lists the live
 * roles. The service is `custody-<role>`; its metadata says role, id, incarnation and pid; its one
 * endpoint `stats` (subject `custody.v1.svc.<role>.<id>`) answers with the process's stats, which
 * are also the endpoint's `data` in a STATS reply.
 */

/** Version every custody service reports (the CLI's version). */
export const SERVICE_VERSION = "0.1.0";
/** Service names start with this; the role follows. */
export const SERVICE_PREFIX = "custody-";

/** The service name of a role (`custody-holder`, ...). */
export function serviceName(role: string): string {
  return `${SERVICE_PREFIX}${role}`;
}

/** Subject tokens and service names allow letters, digits, `-` and `_` only; anything else becomes `_`. */
const token = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, "_");

/** Who a process is, as its service metadata says. */
export interface ServiceIdentityInput {
  readonly role: string;
  readonly id: string;
  readonly incarnation?: number | undefined;
}

/** A registered service; `stop` unregisters it (the connection stays open). */
export interface RegisteredService {
  readonly service: Service;
  stop(): Promise<void>;
}

/**
 * Registers this process as `custody-<role>` on `nc`. `stats` is called for every STATS request
 * and every request on the `stats` endpoint.
 */
export async function registerService(
  nc: NatsConnection,
  who: ServiceIdentityInput,
  stats: () => unknown,
): Promise<RegisteredService> {
  // The services package nests its own nats-core build; our connection speaks the same protocol,
  // so it is handed over as-is (only the type names differ).
  const svcm = new Svcm(nc as unknown as ConstructorParameters<typeof Svcm>[0]);
  const service = await svcm.add({
    name: serviceName(token(who.role)),
    version: SERVICE_VERSION,
    description: `custody ${who.role} ${who.id}`,
    metadata: {
      role: who.role,
      id: who.id,
      ...(who.incarnation !== undefined ? { incarnation: String(who.incarnation) } : {}),
      pid: String(process.pid),
    },
    statsHandler: () => Promise.resolve(stats()),
  });
  service.addEndpoint("stats", {
    subject: `custody.v1.svc.${token(who.role)}.${token(who.id)}`,
    handler: (err, msg) => {
      if (err === null) msg.respond(JSON.stringify(stats()));
    },
  });
  return {
    service,
    stop: async () => {
      if (!service.isStopped) await service.stop();
    },
  };
}

/** The services client on `nc`, collecting answers for `waitMs`. */
export function serviceClient(nc: NatsConnection, waitMs: number): ServiceClient {
  return new Svcm(nc as unknown as ConstructorParameters<typeof Svcm>[0]).client({
    strategy: "timer",
    maxWait: waitMs,
  });
}

/**
 * Every `custody-*` service's STATS reply within `waitMs` (of one role when given). A reply the
 * client cannot read ends the collection early and is counted in `unreadable`; no service at all
 * is an empty list. With `expect`, the collection also ends as soon as that many `custody-*`
 * services answered (a caller who knows how many processes run need not wait out `waitMs`).
 */
export async function gatherServiceStats(
  nc: NatsConnection,
  opts: { role?: string | undefined; waitMs: number; expect?: number | undefined },
): Promise<{ replies: ServiceStats[]; unreadable: number }> {
  const replies: ServiceStats[] = [];
  let unreadable = 0;
  try {
    const it = await serviceClient(nc, opts.waitMs).stats(opts.role === undefined ? "" : serviceName(token(opts.role)));
    for await (const s of it) {
      if (typeof s?.name === "string" && s.name.startsWith(SERVICE_PREFIX)) replies.push(s);
      if (opts.expect !== undefined && replies.length >= opts.expect) break;
    }
  } catch (err) {
    // No responders means no service runs; anything else is an answer we could not read.
    if (!/no responders/i.test(String((err as Error)?.message ?? err))) unreadable += 1;
  }
  return { replies, unreadable };
}
