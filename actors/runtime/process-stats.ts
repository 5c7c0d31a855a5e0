import type { NatsConnection } from "../../transport/index.ts";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { subjectFilter, psSubject } from "../../transport/protocol/index.ts";
import type { Transport, TransportSubscription } from "../../transport/index.ts";
import { gatherServiceStats, registerService, type RegisteredService } from "./service-registration.ts";

/** What a running process says about itself when asked on `custody.v1.ps.<role>`. */
export interface ProcessStats {
  readonly role: string;
  readonly id: string;
  readonly incarnation?: number;
  /**
   * Set once the control log admitted a newer incarnation of this identity: this process serves nothing and is exiting.
   */
  readonly fencedBy?: number;
  readonly pid: number;
  readonly uptimeMs: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly counters: Readonly<Record<string, number>>;
  /** Role-specific figures (retained bytes, custody lag, evaluation times, ...). */
  readonly figures: Readonly<Record<string, number>>;
  /** Event-loop delay p99 (ms) since the previous ask: how long a message may wait for this process. */
  readonly eventLoopP99Ms: number;
  /**
   * Raw samples since the previous ask (e.g. the controller's evaluation times), for exact percentiles over any window.
   */
  readonly samples?: Readonly<Record<string, readonly number[]>>;
}

/** What `serveProcessStats` returns: the ps subscription, and the NATS service once registered. */
export interface ServedProcessStats extends TransportSubscription {
  /**
   * Resolves once the process is registered as a NATS service (never rejects: a failure is logged, ps still answers).
   */
  readonly registered: Promise<void>;
}

/**
 * Answers `custody.v1.ps.<role>` (and the `*` form a caller uses to reach every role) with this
 * process's stats as JSON — what the soak run samples — and, on a NATS transport, registers the
 * process as the NATS service `custody-<role>` whose STATS replies carry the same stats: what
 * `custody ps` lists (see service-registration.ts).
 */
export function serveProcessStats(
  transport: Transport & { readonly connection?: NatsConnection },
  role: string,
  stats: () => Omit<ProcessStats, "role" | "pid" | "uptimeMs" | "rssBytes" | "heapUsedBytes" | "eventLoopP99Ms">,
): ServedProcessStats {
  const started = Date.now();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const snapshot = (): ProcessStats => {
    const m = process.memoryUsage();
    const eventLoopP99Ms = loop.count > 0 ? Math.round(loop.percentile(99) / 1e4) / 100 : 0;
    loop.reset();
    return {
      role,
      pid: process.pid,
      uptimeMs: Date.now() - started,
      rssBytes: m.rss,
      heapUsedBytes: m.heapUsed,
      eventLoopP99Ms,
      ...stats(),
    };
  };
  const sub = transport.subscribe(subjectFilter("ps"), (msg) => {
    if (msg.subject !== psSubject(role) && msg.subject !== psSubject("all")) return;
    transport.respond(msg, new TextEncoder().encode(JSON.stringify(snapshot())));
  });
  let service: RegisteredService | undefined;
  let stopped = false;
  const first = stats();
  const registered =
    transport.connection === undefined
      ? Promise.resolve()
      : registerService(transport.connection, { role, id: first.id, incarnation: first.incarnation }, snapshot).then(
          async (s) => {
            service = s;
            if (stopped) await s.stop();
            // Registered means reachable: the server has the service's subscriptions before anyone is told
            // (a ping from another connection right after got no_responders under load in CI).
            else await transport.flush().catch(() => undefined);
          },
          (err: unknown) => {
            process.stderr.write(`${role} ${first.id}: not registered as a NATS service: ${(err as Error).message}\n`);
          },
        );
  const end = () => {
    stopped = true;
    loop.disable();
    void service?.stop().catch(() => undefined);
  };
  return {
    subject: sub.subject,
    registered,
    unsubscribe: () => {
      end();
      sub.unsubscribe();
    },
    drain: async () => {
      end();
      await sub.drain();
    },
  };
}

/** A stats reply that does not parse as ProcessStats. */
export class ProcessStatsReplyError extends Error {
  readonly code = "bad_process_stats_reply";
  constructor(readonly detail: string) {
    super(`process stats reply rejected: ${detail}`);
  }
}

function parseStats(data: Uint8Array): ProcessStats {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder().decode(data));
  } catch {
    throw new ProcessStatsReplyError("not JSON");
  }
  return checkStats(v);
}

/** Checks that a decoded value has the shape of ProcessStats. */
function checkStats(v: unknown): ProcessStats {
  const o = v as Record<string, unknown>;
  if (typeof o !== "object" || o === null) throw new ProcessStatsReplyError("not an object");
  for (const k of ["role", "id"])
    if (typeof o[k] !== "string") throw new ProcessStatsReplyError(`${k} is not a string`);
  for (const k of ["pid", "uptimeMs", "rssBytes", "heapUsedBytes", "eventLoopP99Ms"])
    if (typeof o[k] !== "number") throw new ProcessStatsReplyError(`${k} is not a number`);
  for (const k of ["counters", "figures"])
    if (typeof o[k] !== "object" || o[k] === null) throw new ProcessStatsReplyError(`${k} is not an object`);
  return o as unknown as ProcessStats;
}

/**
 * Asks every process on the bus for its stats and gathers the answers that arrive within `waitMs`.
 * Replies that do not parse are counted in `rejected`, never returned.
 */
export async function gatherProcessStats(
  nc: NatsConnection,
  opts: { role?: string; waitMs?: number } = {},
): Promise<{ stats: ProcessStats[]; rejected: number }> {
  const stats: ProcessStats[] = [];
  let rejected = 0;
  const replies = await nc.requestMany(psSubject(opts.role ?? "all"), new Uint8Array(0), {
    strategy: "timer",
    maxWait: opts.waitMs ?? 1000,
  });
  for await (const m of replies) {
    try {
      stats.push(parseStats(m.data));
    } catch {
      rejected += 1;
    }
  }
  stats.sort((a, b) => a.role.localeCompare(b.role) || a.id.localeCompare(b.id));
  return { stats, rejected };
}

/**
 * Lists the live role processes through the NATS services client: every `custody-<role>` service's
 * STATS reply within `waitMs` (of one role when given), its `stats` endpoint data read as
 * ProcessStats. Replies that do not read as such are counted in `rejected`, never returned.
 * `expect` ends the wait once that many services answered (see gatherServiceStats).
 */
export async function listProcesses(
  nc: NatsConnection,
  opts: { role?: string; waitMs?: number; expect?: number } = {},
): Promise<{ stats: ProcessStats[]; rejected: number }> {
  const { replies, unreadable } = await gatherServiceStats(nc, {
    role: opts.role,
    waitMs: opts.waitMs ?? 1000,
    expect: opts.expect,
  });
  const stats: ProcessStats[] = [];
  let rejected = unreadable;
  for (const r of replies) {
    try {
      stats.push(checkStats(r.endpoints?.find((e) => e.name === "stats")?.data));
    } catch {
      rejected += 1;
    }
  }
  stats.sort((a, b) => a.role.localeCompare(b.role) || a.id.localeCompare(b.id));
  return { stats, rejected };
}
