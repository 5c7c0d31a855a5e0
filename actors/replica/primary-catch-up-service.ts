import { randomBytes } from "node:crypto";
import { Counters, CustodyError, systemClock, type Clock } from "../../core/index.ts";
import {
  decodeAny,
  decodeMessage,
  encodeMessage,
  parseSubjectOf,
  replicaCatchupBeginSpec,
  replicaCatchupChunkSpec,
  replicaCatchupNextSpec,
  replicaCatchupPlanSpec,
  replicaCatchupRefusedSpec,
  replicaCatchupRequestsOfVolume,
} from "../../transport/protocol/index.ts";
import type { InboundMessage, Transport, TransportSubscription } from "../../transport/index.ts";
import { BLOCK_SIZE, type SmartWalVolume } from "../../volume/index.ts";
import { itemCount, planCatchUp, readItems, type CatchUpPlan } from "./catch-up-plan.ts";
import { CatchUpRefusal, CatchUpRefusedError } from "./catch-up-refusal.ts";
import { sealItems } from "./catch-up-seal.ts";

export interface PrimaryCatchUpConfig {
  readonly volume: string;
  /** The replicas this primary serves; any other is refused (`catchup_not_configured`). */
  readonly replicas: readonly string[];
  /** Data bytes per chunk (default 256 KiB; always under half the server's max_payload). */
  readonly maxChunkBytes?: number;
  /** Sessions open at once (default 4): each may hold a snapshot's blocks. */
  readonly maxSessions?: number;
  /** A session no request touched for this long is dropped (default 30 s). */
  readonly sessionTimeoutMs?: number;
}

export interface PrimaryCatchUpPorts {
  readonly transport: Transport;
  /** The primary's volume (its owner opens and closes it). */
  readonly volume: SmartWalVolume;
  /** The volume's data key: chunks are sealed with it, so plaintext never crosses the bus. */
  readonly dataKey: Uint8Array;
  readonly clock?: Clock;
  readonly counters?: Counters;
}

interface Session {
  readonly replica: string;
  readonly plan: CatchUpPlan;
  timer: unknown;
}

const refuse = (code: CatchUpRefusal, message: string, detail: Record<string, unknown> = {}) =>
  new CatchUpRefusedError(code, message, detail);

/**
 * The primary's side of replica catch-up (issue #18): beside the primary volume, it answers the
 * requests of the configured replicas on `custody.v1.replica-catchup.<volume>.<replica>` — `begin`
 * decides (catch-up-plan.ts) and opens a session, each `next` answers one sealed, bounded chunk.
 * Requests are answered one at a time, in arrival order. A refused or malformed request is answered
 * with `replica-catchup-refused {code}`, counted (`replica_catchup_<code>`) and changes nothing.
 * Sessions are bounded in number and expire when abandoned (`replica_catchup_session_expired`).
 */
export class PrimaryCatchUpService {
  readonly counters: Counters;
  private readonly sessions = new Map<string, Session>();
  private readonly clock: Clock;
  private sub: TransportSubscription | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    readonly config: PrimaryCatchUpConfig,
    private readonly ports: PrimaryCatchUpPorts,
  ) {
    this.counters = ports.counters ?? new Counters();
    this.clock = ports.clock ?? systemClock;
  }

  /** Subscribes the volume's catch-up requests; resolves once the server has the subscription. */
  async start(): Promise<void> {
    this.sub = this.ports.transport.subscribe(replicaCatchupRequestsOfVolume(this.config.volume), (m) => {
      this.chain = this.chain.then(() => this.handle(m));
    });
    await this.ports.transport.flush();
  }

  /** Stops answering and drops every session. */
  stop(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
    for (const id of [...this.sessions.keys()]) this.drop(id);
  }

  /** Sessions open now. */
  sessionCount(): number {
    return this.sessions.size;
  }

  private async handle(msg: InboundMessage): Promise<void> {
    let reply: Uint8Array;
    try {
      reply = await this.answer(msg);
    } catch (err) {
      const code = err instanceof CustodyError ? err.code : CatchUpRefusal.Failed;
      this.counters.inc(`replica_catchup_${code.replace(/^catchup_/, "")}`);
      reply = encodeMessage(replicaCatchupRefusedSpec, {
        code: code.slice(0, 64),
        message: (err instanceof Error ? err.message : String(err)).slice(0, 1024),
      });
    }
    try {
      this.ports.transport.respond(msg, reply);
    } catch {
      // The connection closed under a late answer (stop during a read): the replica times out and asks again.
      this.counters.inc("replica_catchup_reply_lost");
    }
  }

  private async answer(msg: InboundMessage): Promise<Uint8Array> {
    const { volume, replica } = parseSubjectOf("replica-catchup", msg.subject);
    if (volume !== this.config.volume)
      throw refuse(CatchUpRefusal.WrongTarget, `this primary serves ${this.config.volume}`, { volume });
    if (!this.config.replicas.includes(replica))
      throw refuse(CatchUpRefusal.NotConfigured, `replica ${replica} is not configured for ${volume}`, { replica });
    const { kind } = decodeAny(msg.data);
    if (kind === replicaCatchupBeginSpec.kind) {
      const b = decodeMessage(replicaCatchupBeginSpec, msg.data);
      this.checkTarget(b, volume, replica);
      return this.begin(replica, b.flushedLsn);
    }
    if (kind === replicaCatchupNextSpec.kind) {
      const b = decodeMessage(replicaCatchupNextSpec, msg.data);
      this.checkTarget(b, volume, replica);
      return this.next(replica, b.session, b.cursor);
    }
    throw refuse(CatchUpRefusal.UnexpectedKind, `a catch-up request cannot be a ${kind}`, { kind });
  }

  /** The body names the subject's volume and replica (the subject is what the server's permissions check). */
  private checkTarget(b: { volume: string; replica: string }, volume: string, replica: string): void {
    if (b.volume !== volume || b.replica !== replica)
      throw refuse(CatchUpRefusal.WrongTarget, "the request names another volume or replica than its subject", {
        volume: b.volume,
        replica: b.replica,
      });
  }

  private chunkBytes(): number {
    const max = this.ports.transport.maxPayloadBytes?.() ?? 1024 * 1024;
    return Math.max(BLOCK_SIZE, Math.min(this.config.maxChunkBytes ?? 256 * 1024, Math.floor(max / 2)));
  }

  private async begin(replica: string, flushedLsn: number): Promise<Uint8Array> {
    if (this.sessions.size >= (this.config.maxSessions ?? 4))
      throw refuse(CatchUpRefusal.Busy, "too many catch-up sessions are open", { open: this.sessions.size });
    const plan = await planCatchUp(this.ports.volume, flushedLsn, Math.floor(this.chunkBytes() / BLOCK_SIZE));
    const session = randomBytes(8).toString("hex");
    const items = itemCount(plan);
    // Nothing to send (the replica is at the head): no session to keep.
    if (items > 0) this.sessions.set(session, { replica, plan, timer: this.expireLater(session) });
    this.counters.inc("replica_catchup_begun");
    const { blocks, pieces, ...rest } = plan;
    return encodeMessage(replicaCatchupPlanSpec, { ...rest, session, deltaBlocks: blocks.length, items });
  }

  private async next(replica: string, id: string, cursor: number): Promise<Uint8Array> {
    const s = this.sessions.get(id);
    if (s === undefined || s.replica !== replica)
      throw refuse(CatchUpRefusal.UnknownSession, "no such catch-up session (finished, expired or never opened)", {
        session: id,
      });
    const items = itemCount(s.plan);
    if (cursor >= items)
      throw refuse(CatchUpRefusal.BadCursor, `cursor ${cursor} is past the session's ${items} items`, {
        cursor,
        items,
      });
    this.clock.clearTimeout(s.timer);
    s.timer = this.expireLater(id);
    const chunk = await readItems(this.ports.volume, s.plan, cursor, this.chunkBytes());
    const done = cursor + chunk.length === items;
    const sealed = sealItems(this.ports.dataKey, this.config.volume, id, cursor, chunk);
    this.counters.inc("replica_catchup_chunk");
    if (done) {
      this.drop(id);
      this.counters.inc("replica_catchup_done");
    }
    return encodeMessage(replicaCatchupChunkSpec, { session: id, cursor, count: chunk.length, done, sealed });
  }

  private expireLater(id: string): unknown {
    return this.clock.setTimeout(() => {
      if (!this.sessions.has(id)) return;
      this.sessions.delete(id);
      this.counters.inc("replica_catchup_session_expired");
    }, this.config.sessionTimeoutMs ?? 30_000);
  }

  private drop(id: string): void {
    const s = this.sessions.get(id);
    if (s !== undefined) this.clock.clearTimeout(s.timer);
    this.sessions.delete(id);
  }
}

/** Starts a catch-up service beside a primary volume (its writer's process starts it). */
export async function startPrimaryCatchUp(
  config: PrimaryCatchUpConfig,
  ports: PrimaryCatchUpPorts,
): Promise<PrimaryCatchUpService> {
  const s = new PrimaryCatchUpService(config, ports);
  await s.start();
  return s;
}
