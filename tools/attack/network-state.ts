/**
 * What the attacks must not change, read from outside the processes as an operator would: every
 * role's incarnation, counters and custody figures (`custody ps`, the NATS services stats), and the
 * control log's fold as the roles read it (trusting only the operator key `custody init` wrote).
 */
import { join } from "node:path";
import { ControlLogFollower } from "../../custody/index.ts";
import { readPublicKeyHex } from "../../actors/runtime/index.ts";
import { listProcesses, type ProcessStats } from "../../actors/runtime/index.ts";
import { openJetStreamControlLog, type JetStreamControlLog } from "../../transport/index.ts";
import type { AttackerConnection } from "./principal.ts";
import type { SecuredNetwork } from "./secured-network.ts";

/** One look at the network. */
export interface NetworkState {
  /** By `<role>/<id>`. */
  readonly processes: Readonly<Record<string, ProcessStats>>;
  /** The control log as its readers fold it. */
  readonly log: {
    readonly lastSeq: number;
    readonly headHash: string;
    /** `<id>@<incarnation>/<key hex>/<failure domain>/<status>` per admitted holder, sorted. */
    readonly holders: readonly string[];
    /** `<obligation>: <holders>` per obligation, sorted. */
    readonly obligations: readonly string[];
    /** Codes of the entries the fold skipped, in log order. */
    readonly rejected: readonly string[];
  };
}

/** Reads the network's state over the operator's connection `op`. */
export class StateReader {
  private constructor(
    private readonly op: AttackerConnection,
    private readonly store: JetStreamControlLog,
    private readonly follower: ControlLogFollower,
    /** How many role processes the network runs: a read that heard from all of them waits no longer. */
    private readonly processCount: number,
  ) {}

  static async open(net: SecuredNetwork, op: AttackerConnection): Promise<StateReader> {
    const store = await openJetStreamControlLog(op.transport.connection, { region: net.controlRegion });
    const trust = { operators: { operator: readPublicKeyHex(join(net.out, "operator", "operator.pub")) } };
    return new StateReader(op, store, new ControlLogFollower(store, undefined, trust), net.roles.size);
  }

  async read(): Promise<NetworkState> {
    // Every process answers at once with its figures of that moment; waiting out the rest of the
    // 800 ms is only for one that is gone (it then shows as "no longer answers").
    const { stats } = await listProcesses(this.op.transport.connection, { waitMs: 800, expect: this.processCount });
    const s = await this.follower.refresh();
    return {
      processes: Object.fromEntries(stats.map((p) => [`${p.role}/${p.id}`, p])),
      log: {
        lastSeq: s.lastSeq,
        headHash: s.headHash,
        holders: Object.values(s.holders)
          .map(
            (h) =>
              `${h.holderId}@${h.incarnation}/${Buffer.from(h.publicKey).toString("hex")}/` +
              `${h.failureDomain}/${h.status}`,
          )
          .sort(),
        obligations: Object.values(s.obligations)
          .map((o) => `${o.obligationId}: ${Object.keys(o.responsible).sort().join(",")}`)
          .sort(),
        rejected: s.rejected.map((r) => r.code),
      },
    };
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}

/** A figure of process `key` (`holder/h-w1`, ...), 0 when absent. */
export function figure(s: NetworkState, key: string, name: string): number {
  return s.processes[key]?.figures[name] ?? 0;
}

/** A counter of process `key`, 0 when absent. */
export function counter(s: NetworkState, key: string, name: string): number {
  return (s.processes[key]?.counters as Record<string, number> | undefined)?.[name] ?? 0;
}

/** Counters that grew from `a` to `b`, as `<process>.<counter> +n`. */
export function grownCounters(a: NetworkState, b: NetworkState): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, p] of Object.entries(b.processes)) {
    for (const [name, v] of Object.entries((p.counters ?? {}) as Record<string, number>)) {
      const before = (a.processes[key]?.counters as Record<string, number> | undefined)?.[name] ?? 0;
      if (typeof v === "number" && v > before) out.set(`${key}.${name}`, v - before);
    }
  }
  return out;
}

/**
 * What changed that no attack may change: a process gone or restarted (another incarnation), the
 * admitted holders or the obligations of the control log. Empty when nothing did.
 */
export function invariantChanges(a: NetworkState, b: NetworkState): string[] {
  const out: string[] = [];
  for (const [key, p] of Object.entries(a.processes)) {
    const q = b.processes[key];
    if (q === undefined) out.push(`${key} no longer answers`);
    else if (q.incarnation !== p.incarnation || q.pid !== p.pid) out.push(`${key} restarted`);
  }
  if (JSON.stringify(a.log.holders) !== JSON.stringify(b.log.holders))
    out.push(`admitted holders changed: ${b.log.holders.join("; ")}`);
  if (JSON.stringify(a.log.obligations) !== JSON.stringify(b.log.obligations))
    out.push(`obligations changed: ${b.log.obligations.join("; ")}`);
  return out;
}
