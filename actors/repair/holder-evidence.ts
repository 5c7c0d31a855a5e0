import { CustodyError, type Clock } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import {
  ReceiptLedger,
  receiptBatchSpec,
  receiptVerifyContext,
  type ControlState,
  type Holding,
} from "../../custody/index.ts";
import {
  decodeAny,
  decodeMessage,
  eventSubject,
  parseSubjectOf,
  receiptsOfVolume,
  receiptSubject,
  type WriterProgressMessage,
} from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { CommitRun } from "../../policies/index.ts";

/** What the surviving holders (and, when it lives, the writer) said within the listening window. */
export interface HolderEvidence {
  /** Verified holdings, as a controller's ledger would hold them. */
  readonly holdings: Holding[];
  /** Holders at least one verified batch came from, sorted. */
  readonly heard: string[];
  /** Batches refused by verification, per error code (they changed nothing). */
  readonly rejected: Record<string, number>;
  /**
   * The writer's progress (a controller's SourceProgress), when it published any (else empty: heads then come from the
   * receipts).
   */
  readonly progress: { readonly heads: Record<string, number>; readonly commits: CommitRun[] };
  /** How long it listened (ms). */
  readonly listenedMs: number;
}

/**
 * Listens, as a controller does, to `volume`'s signed receipt batches (every holder re-announces
 * what it retains every receipt-refresh interval) and writer progress, for at most `waitMs`: each
 * batch is verified against the folded control log `s` into a fresh receipt ledger; a refused one
 * is counted and changes nothing. Ends early once every holder in `expect` (less the `excused`)
 * was heard from on every lane in `lanes`. Needs no controller: this is how recovery and status learn what survives.
 */
export async function gatherHolderEvidence(
  transport: Transport,
  s: ControlState,
  q: {
    readonly volume: string;
    readonly lanes: readonly string[];
    readonly expect: readonly string[];
    /**
     * Holders not to wait for once it resolves: those that said (unsigned, e.g. in their process
     * stats) they retain nothing of the volume — a holder with nothing sends no receipt. It only
     * ends the wait sooner; what counts is still only a verified receipt.
     */
    readonly excused?: Promise<readonly string[]>;
    readonly waitMs: number;
    readonly staleAfterMs: number;
    readonly clock: Clock;
  },
): Promise<HolderEvidence> {
  const ledger = new ReceiptLedger({ clock: q.clock, maxEvidenceAgeMs: q.staleAfterMs });
  const rejected: Record<string, number> = {};
  const heads: Record<string, number> = {};
  const commits: CommitRun[] = [];
  const started = q.clock.now();
  const seen = new Set<string>();
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const expect = new Set(q.expect);
  const complete = () => [...expect].every((h) => q.lanes.every((l) => seen.has(`${h}/${l}`)));
  void q.excused?.then(
    (ids) => {
      for (const id of ids) expect.delete(id);
      if (complete()) done();
    },
    () => undefined,
  );
  const receipts = transport.subscribe(receiptsOfVolume(q.volume), (msg) => {
    try {
      const { volume, lane } = applyReceiptBatch(ledger, s, msg);
      for (const h of ledger.holdings({ volume, lane })) seen.add(`${h.holderId}/${lane}`);
      if (complete()) done();
    } catch (err) {
      const code = err instanceof CustodyError ? err.code : "invalid";
      rejected[code] = (rejected[code] ?? 0) + 1;
    }
  });
  const events = transport.subscribe(eventSubject(q.volume), (msg) =>
    noteWriterProgress(msg.data, q.volume, q.lanes, heads, commits),
  );
  const timer = setTimeout(done, q.waitMs);
  try {
    await finished;
  } finally {
    clearTimeout(timer);
    receipts.unsubscribe();
    events.unsubscribe();
  }
  const holdings = ledger.holdings({ volume: q.volume });
  return {
    holdings,
    heard: [...new Set(holdings.map((h) => h.holderId))].sort(),
    rejected,
    progress: { heads, commits },
    listenedMs: Math.round(q.clock.now() - started),
  };
}

/**
 * Verifies a receipt batch against the folded control log `s` into `ledger` (releases are not
 * subtracted). Throws when the subject, the encoding or the verification is wrong.
 */
function applyReceiptBatch(
  ledger: ReceiptLedger,
  s: ControlState,
  msg: { readonly subject: string; readonly data: Uint8Array },
): { volume: string; lane: string } {
  const { volume, lane } = parseSubjectOf("receipt", msg.subject);
  const signed = decodeMessage(receiptBatchSpec, msg.data);
  const ctx = {
    ...receiptVerifyContext(s, { volume, lane, subject: receiptSubject(volume, lane) }),
    released: () => RangeSet.EMPTY,
  };
  ledger.apply(signed, ctx);
  return { volume, lane };
}

/**
 * Adds a writer-progress event of `volume` to `heads` and `commits` (lanes in `lanes` only). Other
 * event kinds and malformed events are skipped, as the controller skips them.
 */
function noteWriterProgress(
  data: Uint8Array,
  volume: string,
  lanes: readonly string[],
  heads: Record<string, number>,
  commits: CommitRun[],
): void {
  try {
    const decoded = decodeAny(data);
    if (decoded.kind !== "writer-progress") return;
    const p = decoded.body as WriterProgressMessage;
    if (p.volume !== volume) return;
    for (const l of p.lanes) {
      if (!lanes.includes(l.lane)) continue;
      heads[l.lane] = Math.max(heads[l.lane] ?? 0, l.head);
      for (const [first, last, at, bytes] of l.runs)
        commits.push({ lane: l.lane, first, last, committedAtMs: at, bytesPerSeq: bytes });
    }
  } catch {
    // a malformed event is skipped, as the controller skips it
  }
}
