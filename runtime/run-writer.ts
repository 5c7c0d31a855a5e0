import { readDataKeyFile } from "./data-key-file.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { trace } from "@opentelemetry/api";
import type { WriteAck } from "../actors/index.ts";
import { startVolumeWriter, type VolumeWriter } from "../actors/index.ts";
import { claimIncarnation } from "../actors/index.ts";
import type { VolumeWriterConfig } from "../actors/index.ts";
import { UnitOutbox } from "../actors/index.ts";
import { startPrimaryCatchUp } from "../actors/index.ts";
import { systemClock } from "../core/index.ts";
import { nodeFileLayer } from "../core/index.ts";
import { ControlLogFollower } from "../custody/index.ts";
import { ControlLogPeers, writerSigningKey } from "../custody/index.ts";
import { openJetStreamControlLog } from "../transport/index.ts";
import { SmartWalVolume } from "../volume/index.ts";
import { connectRole } from "./connect.ts";
import { linkInFlight, shapedByLinks } from "./role-links.ts";
import { withRouteProbing } from "./route-probe-config.ts";
import { startRoleTracing } from "./role-tracing.ts";
import { publishingInWriteSpans, WriteSpans } from "./write-span-links.ts";
import { loadControlTrust } from "./control-trust-files.ts";
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
 * acknowledged after a local sync and logged (runtime/workload-loop.ts).
 */
export async function runWriter(cfg: WriterRoleConfig): Promise<RunningWriter> {
  const w = cfg.writer as unknown as Omit<VolumeWriterConfig, "term">;
  const ackUnder = cfg.workload?.contract?.name;
  // Checked before anything starts: a workload waiting on a contract the writer lacks would never acknowledge.
  if (ackUnder !== undefined && !(w.contracts ?? []).some((c) => c.name === ackUnder))
    throw new RoleConfigError(`workload.contract: the writer has no contract ${ackUnder}`, {
      path: "workload.contract.name",
    });
  // One process per state directory: a second start is refused before it claims a term (StateDirLockedError).
  const lock = lockStateDir(cfg.stateDir, { role: "writer", id: w.writerId });
  const { transport, lost } = await connectRole(cfg.nats, `writer-${w.writerId}`).catch((err: unknown) => {
    lock.release();
    throw err;
  });
  const tracing = startRoleTracing(
    cfg.spanFile,
    "writer",
    w.writerId,
    cfg.links ? { "custody.site": cfg.links.site } : {},
  );
  // The writer ships units through the shaped links when the config has them; the control log and stats use the bus
  // directly.
  const probing = withRouteProbing(
    shapedByLinks(transport, cfg.links, trace.getTracer("custody.link")),
    cfg.probe,
    cfg.links,
    w.writerId,
  );
  const sending = probing.transport;
  try {
    const volDir = join(cfg.stateDir, "volume");
    // The first start creates the volume; every later one recovers it (WAL replay, CRC checks).
    if (!existsSync(volDir))
      await SmartWalVolume.create(volDir, {
        blockCount: cfg.volume.blockCount,
        walCapacity: cfg.volume.walCapacity ?? 4096,
      });
    const volume = await SmartWalVolume.open(volDir);
    const term = await claimIncarnation(nodeFileLayer, cfg.stateDir, { name: "term" });
    lock.claimed(term);
    const { outbox, recovered } = await UnitOutbox.open(nodeFileLayer, join(cfg.stateDir, "outbox"), systemClock);
    const store = await openJetStreamControlLog(transport.connection, { region: cfg.controlRegion });
    const peers = new ControlLogPeers(
      new ControlLogFollower(store, undefined, loadControlTrust(cfg.controlTrust).trust),
      systemClock,
      1_000,
    );
    await peers.refresh();
    const timer = setInterval(() => void peers.refresh().catch(() => undefined), 1_000);
    const config: VolumeWriterConfig = {
      ...w,
      term,
      lanes: w.lanes.map((l) => ({ ...l, firstSeq: outbox.maxSeq(l.lane) + 1 })),
    };
    // With spans, each unit's hops hang under the write it came from (see write-span-links.ts).
    const writeSpans = cfg.spanFile !== undefined ? new WriteSpans() : undefined;
    const dataKey = readDataKeyFile(cfg.dataKeyFile);
    const signing = cfg.signUnits ? { writerKey: writerSigningKey(dataKey).privateKey } : {};
    const writer = startVolumeWriter(config, {
      transport: writeSpans !== undefined ? publishingInWriteSpans(sending, writeSpans) : sending,
      clock: systemClock,
      volume,
      dataKey,
      peers,
      outbox,
      recovered,
      ...signing,
    });
    // Beside the primary volume: the configured replicas catch up from it over the bus (counted with the writer's
    // counters).
    const catchUp =
      (cfg.replicas ?? []).length > 0
        ? await startPrimaryCatchUp(
            { volume: w.volume, replicas: cfg.replicas! },
            { transport, volume, dataKey, counters: writer.counters },
          )
        : undefined;
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
      figures: {
        custodyLagSeqs: writer.custodyLagSeqs(),
        custodyBacklogBytes: writer.custodyBacklogBytes(),
        head: Object.values(writer.heads()).reduce((a, b) => a + b, 0),
        workloadWrites: workload?.written() ?? 0,
        linkInFlight: linkInFlight(sending),
      },
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
        const left = await writer.drained(cfg.drainDeadlineMs ?? 30_000);
        for (const [lane, seqs] of Object.entries(left))
          process.stderr.write(
            `writer ${w.writerId}: stopping with ${lane} ${seqs.toString()} not yet confirmed by custody (kept in ` +
              `the outbox)\n`,
          );
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
