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
import { CatchUpRefusedError } from "./catch-up-refusal.ts";
import type { CatchUpReport } from "./catch-up-report.ts";
import { openItems, type CatchUpItem } from "./catch-up-seal.ts";
import type { ApplyOp } from "./replica-effects.ts";

export type { CatchUpReport } from "./catch-up-report.ts";

/** Where a catch-up starts: the replica, and its flushed LSN (what the primary compares with its WAL window). */
export interface CatchUpStart {
  readonly replicaId: string;
  readonly volume: string;
  readonly flushedLsn: number;
}

/** The replica's side of a catch-up: its volume, in the order of everything else the replica applies. */
export interface CatchUpPorts {
  /** Applies one chunk's ops in order, after every write handed to the volume before them. */
  apply(ops: readonly ApplyOp[]): Promise<void>;
  /** Everything applied becomes durable; resolves with the flushed source LSN. */
  barrier(): Promise<number>;
}

/** What the flow needs besides the replica's ports: the bus, the data key, and how long to wait for each answer. */
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
 * applying snapshot blocks and WAL records through the replica in order, and a barrier at the end.
 * A refusal rejects with CatchUpRefusedError carrying the primary's code; no answer in time
 * rejects with the transport's TransportError. An interrupted catch-up is simply run again: what
 * was applied is only made durable (and the flushed LSN moved) by the final barrier.
 */
export async function runCatchUp(start: CatchUpStart, ports: CatchUpPorts, link: CatchUpLink): Promise<CatchUpReport> {
  const { replicaId: replica, volume } = start;
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
  const R = start.flushedLsn;
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
    const chunkOps = opsOfItems(plan, cursor, items);
    await ports.apply(chunkOps.ops);
    replayed += chunkOps.replayed;
    cursor += chunk.count;
  }
  const flushed = await ports.barrier();
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
 * The opened `items` of the chunk at `cursor` as ops for the replica, in order: snapshot blocks
 * (the snapshot's LSN counts once its last block is applied; blocks go before any record), then
 * WAL records, a split record's pieces before its last. `replayed`: how many records it holds.
 */
function opsOfItems(
  plan: WireCatchupPlan,
  cursor: number,
  items: readonly CatchUpItem[],
): { ops: ApplyOp[]; replayed: number } {
  let replayed = 0;
  const ops: ApplyOp[] = [];
  let blocks: { lba: number; data: Uint8Array }[] = [];
  // The snapshot's LSN counts once its last block is applied; blocks go before any record.
  const flushBlocks = (next: number) => {
    if (blocks.length > 0)
      ops.push({ kind: "blocks", blocks, asOfLsn: next === plan.deltaBlocks ? (plan.checkpointLsn ?? 0) : 0 });
    blocks = [];
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
    flushBlocks(cursor + i);
    ops.push({ kind: it.last ? "record" : "piece", lsn: it.lsn, lba: it.lba, data: it.data });
    if (it.last) replayed++;
  }
  flushBlocks(cursor + items.length);
  return { ops, replayed };
}
