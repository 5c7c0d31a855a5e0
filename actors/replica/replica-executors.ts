import { Counters, CustodyError } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";
import type { InboundMessage, Transport, TransportSubscription } from "../../transport/index.ts";
import { creditSpec, encodeMessage, unitSubject } from "../../transport/protocol/index.ts";
import type { SmartWalVolume } from "../../volume/index.ts";
import { CatchUpUnavailableError } from "./catch-up-refusal.ts";
import type { CatchUpReport } from "./catch-up-report.ts";
import { ReplicaRefusal, type ReplicaEffect, type ReplicaInboundEvent } from "./replica-effects.ts";
import { replicaFlushedSpec } from "./replica-messages.ts";
import type { ReplicaSettings } from "./replica-state.ts";

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

/** A local request the replica refused (`code`: a ReplicaRefusal). */
export class ReplicaRequestError extends CustodyError {
  constructor(code: ReplicaRefusal, message: string) {
    super(code, message, {});
  }
}

interface Reply<T> {
  resolve(value: T): void;
  reject(err: unknown): void;
}

/**
 * The replica's effect executors (issue #48): the only code that touches its volume, position
 * file and transport. Volume writes, syncs and position writes run one after another in the order
 * the step emitted them (one promise chain, as the replica always had); once one fails, everything
 * queued after it fails too, so nothing after a lost write is ever reported durable. Completions go
 * back to the machine as events through `send`. Local callers wait here, by id, never in context.
 */
export class ReplicaExecutors {
  readonly counters: Counters;
  private chain: Promise<void> = Promise.resolve();
  private readonly subs: TransportSubscription[] = [];
  private readonly callers = new Map<number, Reply<number>>();
  private readonly catchUps = new Map<number, Reply<CatchUpReport>>();
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly settings: ReplicaSettings,
    private readonly ports: ReplicaPorts,
    private readonly send: (event: ReplicaInboundEvent) => void,
  ) {
    this.counters = ports.counters ?? new Counters();
  }

  /**
   * Start: takes this start's incarnation, reads the persisted flushed LSN (0 when none) and
   * subscribes each lane's unit subject; what arrives goes to the machine as `nats.message`.
   */
  async start(): Promise<{ incarnation: number; flushedLsn: number }> {
    // Credit windows name this incarnation, so a restarted replica starts its senders over.
    const incarnation = await this.nextIncarnation();
    let flushedLsn = 0;
    if (await this.ports.files.exists(this.ports.positionPath)) {
      const h = await this.ports.files.open(this.ports.positionPath);
      const b = new Uint8Array(8);
      await h.read(b, 0, 8, 0);
      await h.close();
      flushedLsn = Buffer.from(b).readDoubleBE(0);
    }
    const { replicaId, volume, lanes } = this.settings;
    for (const lane of lanes) {
      const subject = unitSubject(replicaId, volume, lane);
      this.subs.push(this.ports.transport.subscribe(subject, (msg) => this.send({ type: "nats.message", lane, msg })));
    }
    await this.ports.transport.flush();
    return { incarnation, flushedLsn };
  }

  /** This start's incarnation: one above the last one recorded beside the position file (made durable first). */
  private async nextIncarnation(): Promise<number> {
    const h = await this.ports.files.open(`${this.ports.positionPath}.incarnation`, { create: true });
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

  /**
   * Registers a local caller and sends the event naming it; the step answers it with `reply` or
   * `refuse`. Once closed (the machine stopped), it is refused at once.
   */
  ask(event: (id: number) => ReplicaInboundEvent): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      if (this.closed) return reject(new ReplicaRequestError(ReplicaRefusal.Stopped, "the replica stopped"));
      const id = this.nextId++;
      this.callers.set(id, { resolve, reject });
      this.send(event(id));
    });
  }

  /** Registers a catch-up caller; returns the id its `catchUp` event carries. */
  awaitCatchUp(reply: Reply<CatchUpReport>): number {
    const id = this.nextId++;
    this.catchUps.set(id, reply);
    return id;
  }

  execute(e: ReplicaEffect): void {
    switch (e.type) {
      case "count":
        return this.counters.inc(e.name);
      case "publishGrant":
        return this.ports.transport.publish(e.subject, encodeMessage(creditSpec, e.grant));
      case "apply":
        return this.enqueue(
          async () => {
            for (const w of e.writes) await this.ports.volume.write(w.lba, w.data);
          },
          () => this.send({ type: "applied", throughLsn: e.throughLsn, ...(e.id === undefined ? {} : { id: e.id }) }),
          (message) => this.send({ type: "applyFailed", message, ...(e.id === undefined ? {} : { id: e.id }) }),
        );
      case "syncVolume":
        // Its failure breaks the chain, so the position write after it reports it.
        this.chain = this.chain.then(async () => {
          await this.ports.volume.syncCache();
        });
        return;
      case "persistPosition":
        return this.enqueue(
          () => this.writePosition(e.lsn),
          () => this.send({ type: "persisted", seq: e.seq, lsn: e.lsn }),
          (message) => this.send({ type: "persistFailed", seq: e.seq, message }),
        );
      default:
        return this.answer(e);
    }
  }

  /** The effects that answer someone or end the replica. */
  private answer(e: ReplicaEffect): void {
    switch (e.type) {
      case "reply":
        return this.settle(this.callers, e.id)?.resolve(e.value);
      case "refuse":
        return this.settle(this.callers, e.id)?.reject(new ReplicaRequestError(e.code, e.message));
      case "respond": {
        const { replicaId: replica, volume } = this.settings;
        const answer = encodeMessage(replicaFlushedSpec, {
          replica,
          volume,
          flushedLsn: e.flushedLsn,
          reached: e.reached,
        });
        const request: InboundMessage = { subject: e.subject, data: new Uint8Array(0), headers: {} };
        return this.ports.transport.respond(e.reply === undefined ? request : { ...request, reply: e.reply }, answer);
      }
      case "settleCatchUp":
        return this.settle(this.catchUps, e.id)?.resolve(e.report);
      case "failCatchUp":
        return this.settle(this.catchUps, e.id)?.reject(e.error);
      case "refuseCatchUp":
        return this.settle(this.catchUps, e.id)?.reject(new CatchUpUnavailableError(e.reason));
      case "close":
        return this.close();
    }
  }

  private settle<T>(waiting: Map<number, Reply<T>>, id: number): Reply<T> | undefined {
    const r = waiting.get(id);
    waiting.delete(id);
    return r;
  }

  /** Runs `op` after everything queued; reports its completion or failure (the chain stays failed after one). */
  private enqueue(op: () => Promise<void>, done: () => void, failed: (message: string) => void): void {
    const p = this.chain.then(op);
    this.chain = p;
    p.then(done, (err: unknown) => failed(err instanceof Error ? err.message : String(err)));
  }

  /** Writes and fdatasyncs the flushed source LSN. */
  private async writePosition(lsn: number): Promise<void> {
    const h = await this.ports.files.open(this.ports.positionPath, { create: true });
    const b = Buffer.alloc(8);
    b.writeDoubleBE(lsn, 0);
    await h.write(b, 0, 8, 0);
    await h.datasync();
    await h.close();
  }

  /** Ends the subscriptions and refuses whoever still waits (their answers would come through a stopped machine). */
  private close(): void {
    this.closed = true;
    for (const s of this.subs.splice(0)) s.unsubscribe();
    const stopped = () => new ReplicaRequestError(ReplicaRefusal.Stopped, "the replica stopped");
    for (const r of this.callers.values()) r.reject(stopped());
    this.callers.clear();
    for (const r of this.catchUps.values()) r.reject(new CatchUpUnavailableError("stopped"));
    this.catchUps.clear();
  }
}
