import {
  decodeMessage,
  encodeMessage,
  type MessageSpec,
  WireError,
  WireErrorCode,
  replicaCatchupBeginSpec,
  replicaCatchupChunkSpec,
  replicaCatchupNextSpec,
  replicaCatchupPlanSpec,
  replicaCatchupRefusedSpec,
  replicaCatchupSubject,
  type WireCatchupPlan,
} from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { RecoveryDecision } from "../../volume/index.ts";
import { CatchUpRefusedError } from "./catch-up-refusal.ts";
import { openItems, type CatchUpItem } from "./catch-up-seal.ts";
import type { ReplicaCore } from "./replica-core.ts";

/** What a catch-up did. */
export interface CatchUpReport {
  readonly decision: RecoveryDecision;
  readonly reason: string;
  /** R, S, H as probed. */
  readonly replicaFlushedLsn: number;
  readonly walStart: number;
  readonly walHead: number;
  readonly walRecordsReplayed: number;
  readonly deltaBlocks: number;
  readonly flushedLsn: number;
  /**
   * True when WAL catch-up was decided but the ring could not serve it (window moved, or a record unreadable), so a
   * delta was used.
   */
  readonly fellBackToDelta: boolean;
}

/** What the flow needs besides the core: the bus, the volume's data key, and how long to wait for each answer. */
export interface CatchUpLink {
  readonly transport: Transport;
  readonly dataKey: Uint8Array;
  readonly timeoutMs?: number;
}

/** Thrown when a chunk does not fit its session's plan (an item of the wrong kind where a block or record was due). */
export class CatchUpChunkError extends CatchUpRefusedError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("catchup_bad_chunk", message, detail);
  }
}

/**
 * The replica's side of catch-up as a message flow (issue #18): `begin` with its flushed LSN on
 * `custody.v1.replica-catchup.<volume>.<replica>`, then `next` chunk after chunk until `done`,
 * applying snapshot blocks and WAL records through the core in order, and a barrier at the end.
 * A refusal rejects with CatchUpRefusedError carrying the primary's code; no answer in time
 * rejects with the transport's TransportError. An interrupted catch-up is simply run again: what
 * was applied is only made durable (and the flushed LSN moved) by the final barrier.
 */
export async function runCatchUp(core: ReplicaCore, link: CatchUpLink): Promise<CatchUpReport> {
  const { replicaId: replica, volume } = core.config;
  const subject = replicaCatchupSubject(volume, replica);
  const ask = async <T>(spec: MessageSpec<string, T>, data: Uint8Array): Promise<T> => {
    const reply = (await link.transport.request(subject, data, { timeoutMs: link.timeoutMs ?? 10_000 })).data;
    try {
      return decodeMessage(spec, reply);
    } catch (err) {
      // Not the answer asked for: a refusal, or a bad reply (thrown as its WireError).
      if (!(err instanceof WireError && err.code === WireErrorCode.WrongKind)) throw err;
      const r = decodeMessage(replicaCatchupRefusedSpec, reply);
      throw new CatchUpRefusedError(r.code, `the primary refused catch-up: ${r.message}`, { volume, replica });
    }
  };
  const R = core.flushedLsn;
  const plan = await ask(
    replicaCatchupPlanSpec,
    encodeMessage(replicaCatchupBeginSpec, { replica, volume, flushedLsn: R }),
  );
  let cursor = 0;
  let replayed = 0;
  while (cursor < plan.items) {
    const chunk = await ask(
      replicaCatchupChunkSpec,
      encodeMessage(replicaCatchupNextSpec, { replica, volume, session: plan.session, cursor }),
    );
    checkChunkContinues(chunk, plan, cursor);
    const items = openItems(link.dataKey, volume, plan.session, cursor, chunk.count, chunk.sealed);
    replayed += await applyItems(core, plan, cursor, items);
    cursor += chunk.count;
  }
  const flushed = await core.barrier();
  return {
    decision: plan.decision,
    reason: plan.reason,
    replicaFlushedLsn: plan.replicaFlushedLsn,
    walStart: plan.walStart,
    walHead: plan.walHead,
    walRecordsReplayed: replayed,
    deltaBlocks: plan.deltaBlocks,
    flushedLsn: flushed,
    fellBackToDelta: plan.fellBackToDelta,
  };
}

/**
 * Throws CatchUpChunkError unless `chunk` is the next of the plan's session, at `cursor`, and says `done` only at the
 * end.
 */
function checkChunkContinues(
  chunk: { session: string; cursor: number; count: number; done: boolean },
  plan: WireCatchupPlan,
  cursor: number,
): void {
  if (
    chunk.session !== plan.session ||
    chunk.cursor !== cursor ||
    chunk.count === 0 ||
    cursor + chunk.count > plan.items ||
    chunk.done !== (cursor + chunk.count === plan.items)
  ) {
    throw new CatchUpChunkError("a chunk does not continue its session", {
      session: chunk.session,
      cursor: chunk.cursor,
      count: chunk.count,
    });
  }
}

/**
 * Applies the opened `items` of the chunk at `cursor` through the core in order: snapshot blocks
 * (the snapshot's LSN counts once its last block is applied; blocks go before any record), then
 * WAL records, a split record's pieces before its last. Returns how many records were replayed.
 */
async function applyItems(
  core: ReplicaCore,
  plan: WireCatchupPlan,
  cursor: number,
  items: readonly CatchUpItem[],
): Promise<number> {
  let replayed = 0;
  const blocks: { lba: number; data: Uint8Array }[] = [];
  // The snapshot's LSN counts once its last block is applied; blocks go before any record.
  const applyBlocks = async (next: number) => {
    if (blocks.length > 0)
      await core.applyBlocks(blocks.splice(0), next === plan.deltaBlocks ? (plan.checkpointLsn ?? 0) : 0);
  };
  for (const [i, it] of items.entries()) {
    const isBlock = cursor + i < plan.deltaBlocks;
    if ((it.kind === "block") !== isBlock)
      throw new CatchUpChunkError(`item ${cursor + i} is not the ${isBlock ? "block" : "record"} the plan announced`, {
        item: cursor + i,
      });
    if (it.kind === "block") {
      blocks.push({ lba: it.lba, data: it.data });
      continue;
    }
    await applyBlocks(cursor + i);
    if (it.last) {
      await core.applyRecord(it.lsn, it.lba, it.data);
      replayed++;
    } else {
      await core.applyPiece(it.lsn, it.lba, it.data);
    }
  }
  await applyBlocks(cursor + items.length);
  return replayed;
}
