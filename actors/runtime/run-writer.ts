import { readDataKeyFile } from "./data-key-file.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { trace } from "@opentelemetry/api";
import type { WriteAck } from "../index.ts";
import { startVolumeWriter, type VolumeWriter } from "../index.ts";
import { claimIncarnation } from "../index.ts";
import type { VolumeWriterConfig } from "../index.ts";
import { UnitOutbox } from "../index.ts";
import { startPrimaryCatchUp } from "../index.ts";
import { systemClock } from "../../core/index.ts";
import { nodeFileLayer } from "../../core/index.ts";
import { ControlLogPeers, writerSigningKey } from "../../custody/index.ts";
import { SmartWalVolume } from "../../volume/index.ts";
import { connectRole } from "./connect.ts";
import { startRoleTransport } from "./role-transport.ts";
import { followPeers } from "./follow-peers.ts";
import { linkInFlight } from "./role-links.ts";
import { publishingInWriteSpans, WriteSpans } from "./write-span-links.ts";
import { serveProcessStats } from "./process-stats.ts";
import { RoleConfigError, type WriterRoleConfig } from "./role-config.ts";
import { startWorkload } from "./workload-loop.ts";
import { lockStateDir } from "./state-dir-lock.ts";

/** A volume writer running as a process. */
export interface RunningWriter {
  readonly writer: VolumeWriter;
  readonly term: number;
  readonly lost: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a writer process: opens (creating on first start) the volume in the state directory,
 * claims a new term there, opens the outbox — whose units an earlier process left unconfirmed are
 * shipped again first — and starts each lane above everything the outbox holds. With a workload it
 * then writes block after block (one round or a window of writes in flight at a time), each
 * acknowledged after a local sync and logged (actors/runtime/workload-loop.ts).
 */
export async function runWriter(cfg: WriterRoleConfig): Promise<RunningWriter> {
  const w = cfg.writer as unknown as Omit<VolumeWriterConfig, "term">;
  checkWorkloadContract(cfg, w);
  // One process per state directory: a second start is refused before it claims a term (StateDirLockedError).
  const lock = lockStateDir(cfg.stateDir, { role: "writer", id: w.writerId });
  const { transport, lost } = await connectRole(cfg.nats, `writer-${w.writerId}`).catch((err: unknown) => {
    lock.release();
    throw err;
  });
  const { tracing, probing, sending } = startRoleTransport(cfg, "writer", w.writerId, transport);
  try {
    const volume = await openVolume(cfg);
    const term = await claimIncarnation(nodeFileLayer, cfg.stateDir, { name: "term" });
    lock.claimed(term);
    const { outbox, recovered } = await UnitOutbox.open(nodeFileLayer, join(cfg.stateDir, "outbox"), systemClock);
    const { store, peers, timer } = await followPeers(transport, cfg);
    const { writer, dataKey, writeSpans } = startWriter(
      cfg,
      { ...w, term },
      { volume, peers, outbox, recovered, sending },
    );
    const catchUp = await startReplicaCatchUp(cfg, { transport, volume, dataKey, counters: writer.counters });
    const workload =
      cfg.workload === undefined
        ? undefined
        : startWorkload(writer, cfg.workload, cfg.volume.blockCount, (lba, data) =>
            tracedWrite(writer, w.volume, lba, data, writeSpans),
          );
    const done = workload?.done ?? Promise.resolve();
    const stats = serveProcessStats(transport, "writer", () => ({
      id: w.writerId,
      incarnation: term,
      counters: writer.counters.snapshot(),
      figures: { ...writerFigures(writer, sending), workloadWrites: workload?.written() ?? 0 },
    }));
    // Listed by `custody ps` (a NATS service) before the process says it is ready.
    await stats.registered;
    return {
      writer,
      term,
      lost,
      async stop() {
        workload?.stop();
        stats.unsubscribe();
        probing.stop();
        await done.catch(() => undefined);
        // Drain: custody takes what this writer still retains before it goes (the outbox keeps
        // anything left for the next start, which ships it again).
        reportUnconfirmed(w.writerId, await writer.drained(cfg.drainDeadlineMs ?? 30_000));
        clearInterval(timer);
        catchUp?.stop();
        writer.stop();
        await done.catch(() => undefined);
        await outbox.close().catch(() => undefined);
        await volume.close().catch(() => undefined);
        await store.close();
        // Closing the shaped transport first delivers what it still holds back, then closes the bus.
        await sending.close();
        await tracing.stop();
        lock.release();
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

/**
 * Beside the primary volume: the configured replicas catch up from it over the bus (counted with the writer's
 * counters).
 */
async function startReplicaCatchUp(cfg: WriterRoleConfig, on: Parameters<typeof startPrimaryCatchUp>[1]) {
  const volume = (cfg.writer as unknown as VolumeWriterConfig).volume;
  return (cfg.replicas ?? []).length > 0
    ? await startPrimaryCatchUp({ volume, replicas: cfg.replicas! }, on)
    : undefined;
}

/** Checked before anything starts: a workload waiting on a contract the writer lacks would never acknowledge. */
function checkWorkloadContract(cfg: WriterRoleConfig, w: Omit<VolumeWriterConfig, "term">): void {
  const ackUnder = cfg.workload?.contract?.name;
  if (ackUnder !== undefined && !(w.contracts ?? []).some((c) => c.name === ackUnder))
    throw new RoleConfigError(`workload.contract: the writer has no contract ${ackUnder}`, {
      path: "workload.contract.name",
    });
}

/**
 * The volume in the state directory: the first start creates it; every later one recovers it (WAL replay, CRC checks).
 */
async function openVolume(cfg: WriterRoleConfig): Promise<SmartWalVolume> {
  const volDir = join(cfg.stateDir, "volume");
  if (!existsSync(volDir))
    await SmartWalVolume.create(volDir, {
      blockCount: cfg.volume.blockCount,
      walCapacity: cfg.volume.walCapacity ?? 4096,
    });
  return SmartWalVolume.open(volDir);
}

/** What the writer runs on: its volume, peers, outbox (and what it recovered) and the transport it ships through. */
interface WriterBase {
  readonly volume: SmartWalVolume;
  readonly peers: ControlLogPeers;
  readonly outbox: UnitOutbox;
  readonly recovered: Awaited<ReturnType<typeof UnitOutbox.open>>["recovered"];
  readonly sending: Parameters<typeof linkInFlight>[0] & Parameters<typeof publishingInWriteSpans>[0];
}

/** Starts the writer at `w.term`, each lane above what the outbox holds, signing units when configured. */
function startWriter(cfg: WriterRoleConfig, w: VolumeWriterConfig, on: WriterBase) {
  const config: VolumeWriterConfig = {
    ...w,
    lanes: w.lanes.map((l) => ({ ...l, firstSeq: on.outbox.maxSeq(l.lane) + 1 })),
  };
  // With spans, each unit's hops hang under the write it came from (see write-span-links.ts).
  const writeSpans = cfg.spanFile !== undefined ? new WriteSpans() : undefined;
  const dataKey = readDataKeyFile(cfg.dataKeyFile);
  const signing = cfg.signUnits ? { writerKey: writerSigningKey(dataKey).privateKey } : {};
  const writer = startVolumeWriter(config, {
    transport: writeSpans !== undefined ? publishingInWriteSpans(on.sending, writeSpans) : on.sending,
    clock: systemClock,
    volume: on.volume,
    dataKey,
    peers: on.peers,
    outbox: on.outbox,
    recovered: on.recovered,
    ...signing,
  });
  return { writer, dataKey, writeSpans };
}

/** The writer's figures for `custody ps`: custody lag and backlog, the sum of lane heads, link bytes in flight. */
function writerFigures(writer: VolumeWriter, sending: Parameters<typeof linkInFlight>[0]) {
  return {
    custodyLagSeqs: writer.custodyLagSeqs(),
    custodyBacklogBytes: writer.custodyBacklogBytes(),
    head: Object.values(writer.heads()).reduce((a, b) => a + b, 0),
    linkInFlight: linkInFlight(sending),
  };
}

/** Names, in the process log, what custody had not confirmed when the writer stopped. */
function reportUnconfirmed(writerId: string, left: Readonly<Record<string, { toString(): string }>>): void {
  for (const [lane, seqs] of Object.entries(left))
    process.stderr.write(
      `writer ${writerId}: stopping with ${lane} ${seqs.toString()} not yet confirmed by custody (kept in ` +
        `the outbox)\n`,
    );
}

/**
 * One workload write as a `writer.write` span; its unit's hops are published in its context (see
 * write-span-links.ts), so each first hop's `link.send` (and through it the holder's admit) hangs under it.
 */
function tracedWrite(
  writer: VolumeWriter,
  volume: string,
  lba: number,
  data: Uint8Array,
  spans: WriteSpans | undefined,
): Promise<WriteAck> {
  return trace
    .getTracer("custody.writer")
    .startActiveSpan(
      "writer.write",
      { attributes: { "custody.volume": volume, "custody.lba": lba, "custody.blocks": data.length / 4096 } },
      async (span) => {
        try {
          const ack = await writer.write(lba, data);
          const piece = ack.pieces[0];
          span.setAttributes({
            "custody.lsn": ack.lsn,
            ...(piece !== undefined ? { "custody.seq": piece.seq, "custody.lane": piece.lane } : {}),
          });
          for (const p of ack.pieces) spans?.note(p.lane, p.seq, span.spanContext());
          return ack;
        } finally {
          span.end();
        }
      },
    );
}
