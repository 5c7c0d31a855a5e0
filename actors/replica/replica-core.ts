import { unitRecordBytes } from "../../arena/index.ts";
import { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";
import { validateTransportUnit, type TransportUnit } from "../../lanes/index.ts";
import { CreditGrantor } from "../hop/index.ts";
import { unitSubject } from "../../transport/protocol/index.ts";
import type { InboundMessage, Transport, TransportSubscription } from "../../transport/index.ts";
import { readUnitMessage, senderOf, type UnitSubjectMessage } from "../../transport/index.ts";
import { encodeMessage, WireError } from "../../transport/protocol/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";
import type { SmartWalVolume, SnapshotBlock } from "../../volume/index.ts";
import { openPayload } from "../../transport/protocol/index.ts";
import { replicaFlushedSpec } from "./replica-messages.ts";

export interface ReplicaConfig {
  readonly replicaId: string;
  readonly volume: string;
  readonly lanes: readonly string[];
  /** Writers allowed to push units (credited like any holder's upstream). */
  readonly upstream: readonly string[];
  readonly term: number;
  readonly maxOutstandingCredit?: number;
}

export interface ReplicaPorts {
  transport: Transport;
  volume: SmartWalVolume;
  /** The replica materializes plaintext, so it is an authorized principal of the key authority. */
  dataKey: Uint8Array;
  files: FileLayer;
  /** File holding the flushed source LSN (written and fdatasynced after each barrier). */
  positionPath: string;
  counters?: Counters;
}

/**
 * A holder variant that materializes the volume: every record of an accepted unit is written to
 * the local SmartWAL volume (extent write, barrier, then the local WAL record — I7: data before
 * its WAL record), in source LSN order. A barrier syncs and persists the flushed source LSN, which
 * the primary compares with its WAL window on reconnect (see replica-catch-up-flow.ts).
 */
export class ReplicaCore {
  readonly counters: Counters;
  private readonly grantors = new Map<string, CreditGrantor>();
  private readonly subs: TransportSubscription[] = [];
  private chain: Promise<void> = Promise.resolve();
  /** Highest source LSN applied (not necessarily durable). */
  appliedLsn = 0;
  /** Highest source LSN durable here (data and local WAL), as of the last barrier. */
  flushedLsn = 0;

  constructor(
    readonly config: ReplicaConfig,
    private readonly ports: ReplicaPorts,
    private readonly dispatch: (lane: string, msg: InboundMessage) => void,
  ) {
    this.counters = ports.counters ?? new Counters();
  }

  /** This start's incarnation: one above the last one recorded beside the position file (made durable first). */
  private async nextIncarnation(): Promise<number> {
    const path = `${this.ports.positionPath}.incarnation`;
    const h = await this.ports.files.open(path, { create: true });
    try {
      const b = Buffer.alloc(8);
      const n = (await h.read(b, 0, 8, 0)) === 8 ? b.readDoubleBE(0) : 0;
      b.writeDoubleBE(n + 1, 0);
      await h.write(b, 0, 8, 0);
      await h.datasync();
      return n + 1;
    } finally {
      await h.close();
    }
  }

  /** Reads the persisted flushed LSN (0 when none), subscribes and grants initial credit. */
  async start(): Promise<void> {
    // Credit windows name this incarnation, so a restarted replica starts its senders over.
    const incarnation = await this.nextIncarnation();
    for (const lane of this.config.lanes) {
      const { replicaId: holder, volume, upstream: senders } = this.config;
      this.grantors.set(
        lane,
        new CreditGrantor({
          transport: this.ports.transport,
          holder,
          incarnation,
          volume,
          lane,
          senders,
          space: { grant: (n) => n },
          maxOutstanding: this.config.maxOutstandingCredit ?? 1 << 20,
        }),
      );
    }
    if (await this.ports.files.exists(this.ports.positionPath)) {
      const h = await this.ports.files.open(this.ports.positionPath);
      const b = new Uint8Array(8);
      await h.read(b, 0, 8, 0);
      await h.close();
      this.flushedLsn = this.appliedLsn = Buffer.from(b).readDoubleBE(0);
    }
    for (const lane of this.config.lanes) {
      this.subs.push(
        this.ports.transport.subscribe(unitSubject(this.config.replicaId, this.config.volume, lane), (m) =>
          this.dispatch(lane, m),
        ),
      );
    }
    await this.ports.transport.flush();
    for (const g of this.grantors.values()) g.announce();
  }

  stop(): void {
    for (const s of this.subs.splice(0)) s.unsubscribe();
    for (const g of this.grantors.values()) g.close();
  }

  /**
   * One message on our unit subject: a unit, a frame of units, a credit request or a barrier. Bad input is counted,
   * nothing applied.
   */
  handleMessage(lane: string, msg: InboundMessage): void {
    const g = this.grantors.get(lane)!;
    const head = senderOf(msg.headers);
    const sender = head.sender;
    let read: UnitSubjectMessage;
    try {
      read = readUnitMessage(msg, head.sentThrough);
    } catch (err) {
      return this.counters.inc(err instanceof WireError ? err.code : "malformed");
    }
    if (read.kind === "other" && read.name === "replica-barrier") {
      const target = (read.body as { targetLsn: number }).targetLsn;
      void this.barrier().then((flushed) => {
        this.ports.transport.respond(
          msg,
          encodeMessage(replicaFlushedSpec, {
            replica: this.config.replicaId,
            volume: this.config.volume,
            flushedLsn: flushed,
            reached: flushed >= target,
          }),
        );
      });
      return;
    }
    if (sender === undefined || !g.knows(sender)) return this.counters.inc("unknown_sender");
    if (read.kind === "credit-request") {
      g.onRequest(sender, head);
      return;
    }
    if (read.kind !== "units") return this.counters.inc("unexpected_kind");
    for (const arrived of read.units) {
      const u = arrived.unit as TransportUnit | undefined;
      try {
        // An undecodable unit still accounts its credit figure, then is counted by its wire code.
        const credit = g.onArrival(sender, u === undefined ? 0 : unitRecordBytes(u), {
          ...head,
          sentThrough: arrived.sentThrough,
        });
        if (credit.kind === "refused")
          throw new CustodyError(credit.code, "unit was not sent under this replica's credit window", {});
        if (u === undefined) throw arrived.error;
        validateTransportUnit(u);
        if (u.volume !== this.config.volume || u.lane !== lane)
          throw new CustodyError("wrong_lane", "unit belongs to another lane", {});
        if (u.term < this.config.term)
          throw new CustodyError("stale_term", "unit comes from a stale writer term", { term: u.term });
        const recs = openPayload(this.ports.dataKey, u, u.payload);
        for (const r of recs) this.applyRecord(r.lsn, r.lba, r.data);
      } catch (err) {
        this.counters.inc(err instanceof CustodyError ? err.code : "invalid_unit"); // WireError is a CustodyError
      }
    }
    g.topUp(sender);
  }

  /** Applies one source write (skipped when already applied); ordered after everything queued. */
  applyRecord(lsn: number, lba: number, data: Uint8Array): Promise<void> {
    this.chain = this.chain.then(async () => {
      if (lsn <= this.appliedLsn) return void this.counters.inc("duplicate_record");
      await this.ports.volume.write(lba, data);
      this.appliedLsn = lsn;
    });
    return this.chain;
  }

  /**
   * Writes one piece of a source write too large for one catch-up chunk (skipped when the write is
   * already applied); the applied LSN moves only with its last piece (`applyRecord`).
   */
  applyPiece(lsn: number, lba: number, data: Uint8Array): Promise<void> {
    this.chain = this.chain.then(async () => {
      if (lsn <= this.appliedLsn) return;
      await this.ports.volume.write(lba, data);
    });
    return this.chain;
  }

  /**
   * Applies a checkpoint-consistent delta (null = unmapped, written as zeros); afterwards the replica is at `asOfLsn`.
   */
  applyBlocks(blocks: readonly SnapshotBlock[], asOfLsn: number): Promise<void> {
    this.chain = this.chain.then(async () => {
      for (const b of blocks) await this.ports.volume.write(b.lba, b.data ?? new Uint8Array(BLOCK_SIZE));
      this.appliedLsn = Math.max(this.appliedLsn, asOfLsn);
    });
    return this.chain;
  }

  /**
   * Barrier: waits for applied writes, syncs the volume (extent and WAL durable), then persists the
   * flushed source LSN (write + fdatasync) and returns it.
   */
  barrier(): Promise<number> {
    const p = this.chain.then(async () => {
      const lsn = this.appliedLsn;
      await this.ports.volume.syncCache();
      const h = await this.ports.files.open(this.ports.positionPath, { create: true });
      const b = Buffer.alloc(8);
      b.writeDoubleBE(lsn, 0);
      await h.write(b, 0, 8, 0);
      await h.datasync();
      await h.close();
      this.flushedLsn = lsn;
      return lsn;
    });
    this.chain = p.then(() => undefined);
    return p;
  }
}
