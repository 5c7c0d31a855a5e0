import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startHolder, type Holder } from "../index.ts";
import type { HolderConfigInput } from "../index.ts";
import { holderLaneKey, systemClock } from "../../core/index.ts";
import { nodeFileLayer } from "../../core/index.ts";
import { ControlLogPeers } from "../../custody/index.ts";
import { privateKeyFromPkcs8, WriterKeyring } from "../../custody/index.ts";
import { connectRole } from "./connect.ts";
import { startRoleTransport } from "./role-transport.ts";
import { followPeers } from "./follow-peers.ts";
import { drainHolder, type HolderDrainReport } from "./holder-drain.ts";
import { flatRuns } from "./custody-ranges.ts";
import { linkInFlight } from "./role-links.ts";
import { serveProcessStats } from "./process-stats.ts";
import { HolderMetrics } from "./metrics-holder.ts";
import type { HolderRoleConfig } from "./role-config.ts";
import { CustodyError } from "../../core/index.ts";
import { lockStateDir } from "./state-dir-lock.ts";
import { checkMetricsPortFree } from "./metrics-port-check.ts";
import { whenFenced, type HolderFencedError } from "./holder-fencing.ts";

/** Thrown (and the process exits 2) when the NATS connection closes for good: a process must never run deaf. */
export class ConnectionLostError extends CustodyError {
  constructor(role: string) {
    super(
      "connection_lost",
      `${role}: the NATS connection closed for good (reconnect attempts exhausted); exiting so a supervisor ` +
        `restarts this process`,
      { role },
    );
  }
}

/** A holder running as a process, as `custody run holder` starts it. */
export interface RunningHolder {
  readonly holder: Holder;
  /**
   * Its `/metrics` figures beyond the counters (custody bytes, credits, rejections by code, receipt latency); only when
   * the config has a metrics section.
   */
  readonly metrics: HolderMetrics | undefined;
  /** Resolves if the NATS connection closes for good. */
  readonly lost: Promise<void>;
  /** Resolves once the control log admitted a newer incarnation of this holder: it serves nothing from then on. */
  readonly fenced: Promise<HolderFencedError>;
  /**
   * Drains (see holder-drain.ts), stops the holder and closes its connection; resolves with what
   * was left only in RAM. A fenced holder is not drained (it may not flush, receipt or release).
   */
  stop(): Promise<HolderDrainReport>;
}

/**
 * Starts a holder process from its role configuration: connects to NATS, follows the region's
 * control log for peers' admitted keys (re-read every second), claims a new incarnation in the
 * state directory, and starts the holder — which asks to be admitted and, with a flush policy,
 * takes back what its spill stream recovered. The state directory is locked for the process's
 * life (actors/runtime/state-dir-lock.ts). Throws the holder's start errors (e.g. `incarnation_reused`,
 * `state_dir_locked`).
 */
export async function runHolder(cfg: HolderRoleConfig): Promise<RunningHolder> {
  const holderCfg = cfg.holder as unknown as HolderConfigInput;
  const { lock, transport, lost } = await lockAndConnect(cfg, String(holderCfg.holderId));
  const { tracing, probing, sending } = startRoleTransport(cfg, "holder", String(holderCfg.holderId), transport);
  try {
    const { store, peers, timer } = await followPeers(transport, cfg);
    // Only a holder that exports metrics pays for watching every admission and receipt.
    const metrics = cfg.metrics !== undefined ? new HolderMetrics() : undefined;
    const holder = await startHolderActor(cfg, sending, peers, metrics);
    metrics?.attach(holder);
    // A refused second start names the incarnation this process serves.
    lock.claimed(holder.incarnation);
    const fenced = whenFenced(holder);
    const stats = serveProcessStats(transport, "holder", () => holderStats(holder, sending));
    // Listed by `custody ps` (a NATS service) before the process says it is ready.
    await stats.registered;
    return {
      holder,
      metrics,
      lost,
      fenced,
      async stop() {
        // Drain first: no new credit, and what only RAM holds is flushed or released, or named.
        const left = holder.fencedBy() === undefined ? await drainHolder(holder, cfg.drainDeadlineMs ?? 10_000) : {};
        for (const [lane, seqs] of Object.entries(left))
          process.stderr.write(
            `holder ${holder.id}: stopping with ${lane} ${seqs.toString()} held only in RAM (neither flushed nor ` +
              `released by the deadline)\n`,
          );
        stats.unsubscribe();
        probing.stop();
        clearInterval(timer);
        await holder.stop();
        await store.close();
        // Closing the shaped transport first delivers what it still holds back, then closes the bus.
        await sending.close();
        await tracing.stop();
        lock.release();
        return left;
      },
    };
  } catch (err) {
    probing.stop();
    await transport.close();
    await tracing.stop();
    lock.release();
    throw err;
  }
}

/** Starts the holder itself: its key, peers, writer keys, state directory, spill file and what it reports. */
function startHolderActor(
  cfg: HolderRoleConfig,
  sending: Parameters<typeof linkInFlight>[0],
  peers: ControlLogPeers,
  metrics: HolderMetrics | undefined,
): Promise<Holder> {
  const holderCfg = cfg.holder as unknown as HolderConfigInput;
  const privateKey = privateKeyFromPkcs8(readFileSync(cfg.keyFile));
  return startHolder(holderCfg, {
    transport: sending,
    clock: systemClock,
    privateKey,
    peers,
    ...(cfg.writerKeys ? { writerKeys: writerKeyring(cfg.writerKeys) } : {}),
    stateDir: { files: nodeFileLayer, dir: cfg.stateDir },
    // What an operator must see in the process log: disk trouble and custody violations.
    observe: (o) => {
      metrics?.observe(o);
      if (o.type === "flush_failed" || o.type === "violation")
        process.stderr.write(`holder ${String(holderCfg.holderId)}: ${JSON.stringify(o)}\n`);
    },
    ...(holderCfg.flush ? { files: nodeFileLayer, spillPath: join(cfg.stateDir, "spill.log") } : {}),
  });
}

/** The holder's figures for `custody ps` and the attack runner: custody bytes, and where each lane's custody stands. */
function holderStats(holder: Holder, sending: Parameters<typeof linkInFlight>[0]) {
  let ram = 0;
  let disk = 0;
  const lanes: Record<string, number> = {};
  const ranges: Record<string, number[]> = {};
  for (const ob of holder.lanes()) {
    const key = holderLaneKey(ob.volume, ob.lane);
    ram += ob.ramBytes();
    disk += ob.diskBytes();
    // Where each lane's custody stands (sequence numbers; 0 = none).
    lanes[`${key}.retainedMin`] = ob.retained.min ?? 0;
    lanes[`${key}.retainedMax`] = ob.retained.max ?? 0;
    lanes[`${key}.retainedRuns`] = ob.retained.ranges().length;
    lanes[`${key}.diskMax`] = ob.diskResident.max ?? 0;
    lanes[`${key}.releasedMax`] = ob.released.max ?? 0;
    // The retained ranges themselves, flattened (see custody-ranges.ts).
    ranges[`${key}.retained`] = flatRuns(ob.retained);
  }
  const fencedBy = holder.fencedBy();
  return {
    id: holder.id,
    incarnation: holder.incarnation,
    ...(fencedBy !== undefined ? { fencedBy } : {}),
    counters: holder.counters.snapshot(),
    figures: {
      retainedRamBytes: ram,
      retainedDiskBytes: disk,
      retainedBytes: ram + disk,
      spillFileBytes: holder.spillFileBytes(),
      ...lanes,
      linkInFlight: linkInFlight(sending),
    },
    samples: ranges,
  };
}

/** Locks the state directory, checks the metrics port is free, and connects (releasing the lock if that fails). */
async function lockAndConnect(cfg: HolderRoleConfig, holderId: string) {
  // One process per state directory, before anything else: a second start is refused here and
  // claims no incarnation, opens no spill stream and connects nowhere (StateDirLockedError).
  const lock = lockStateDir(cfg.stateDir, { role: "holder", id: holderId });
  // A second copy here with another state directory would ask to be admitted (fencing the running
  // one) before it found its metrics port taken: it fails now instead (MetricsPortInUseError).
  const { transport, lost } = await (cfg.metrics ? checkMetricsPortFree(cfg.metrics) : Promise.resolve())
    .then(() => connectRole(cfg.nats, `holder-${holderId}`))
    .catch((err: unknown) => {
      lock.release();
      throw err;
    });
  return { lock, transport, lost };
}

/** The writer keys a holder's role config names, as a keyring. */
function writerKeyring(keys: readonly { volume: string; fromTerm: number; publicKey: string }[]): WriterKeyring {
  const ring = new WriterKeyring();
  for (const k of keys) ring.name(k.volume, k.fromTerm, Buffer.from(k.publicKey, "hex"));
  return ring;
}
