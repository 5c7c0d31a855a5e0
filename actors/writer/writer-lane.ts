import type { Clock } from "../../core/index.ts";
import type { Counters } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { SendLog } from "../hop/index.ts";
import { CreditSender } from "../hop/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { UnitAttester } from "../hop/index.ts";
import { BLOCK_SIZE } from "../../volume/index.ts";
import { receiverReset, type DownstreamLane } from "../hop/index.ts";
import { LaneObligations } from "../hop/index.ts";
import { believesIncarnation, type PeerDirectory } from "../hop/index.ts";
import type { WriteRecord } from "../../transport/protocol/index.ts";
import { UnitRetention } from "./unit-retention.ts";
import { WriteRejectedError, type LaneSpec, type VolumeWriterConfig } from "./writer-config.ts";

/** One lane of a writer: its first-hop senders, what they owe and receipted, and the unit being filled. */
export interface WriterLane extends DownstreamLane {
  readonly spec: LaneSpec;
  readonly senders: CreditSender[];
  readonly edges: Map<string, CreditSender>;
  /** What each first hop's current incarnation receipted; the writer may forget a unit all of them hold. */
  readonly obligations: LaneObligations;
  readonly sendLogs: Map<string, SendLog>;
  /** Units sent and not yet receipted by every first hop (the writer re-sends them when lost). */
  readonly retention: UnitRetention;
  /** Next sequence to assign. */
  next: number;
  pending: WriteRecord[];
  pendingBytes: number;
  pendingTs: number[];
  /** Sequences per holder proven by verified receipts (monotone: protection, once proven, was proven). */
  readonly proven: Map<string, RangeSet>;
  /** Commit runs not yet published as progress: [first, last, committedAt, bytes]. */
  runs: [number, number, number, number][];
  /** Highest sequence the controller confirmed for every required scenario, on fresh evidence. */
  confirmed: number;
}

/** Builds the state of lane `spec`: one credit sender per first hop, nothing written yet. */
export function openWriterLane(
  spec: LaneSpec,
  config: VolumeWriterConfig,
  seams: { transport: Transport; clock: Clock; counters: Counters; attest?: UnitAttester; peers?: PeerDirectory },
): WriterLane {
  const edges = new Map<string, CreditSender>();
  const sendLogs = new Map<string, SendLog>();
  const obligations = new LaneObligations(spec.holders, config.topologyEpoch);
  // The writer answers to no release frontier: a unit may go once every first hop holds it.
  obligations.authorizeRelease(RangeSet.of(0, Number.MAX_SAFE_INTEGER));
  const resendBackoff = new Map<string, number>();
  const lane = { obligations, sendLogs, edges, resendBackoff };
  for (const h of spec.holders) {
    const onReset = (e: { incarnation: number; restarted: boolean }) => {
      seams.counters.inc(e.restarted ? "first_hop_restarted" : "first_hop_new_window");
      receiverReset(lane, h, e);
    };
    const onMalformed = (code: string) => seams.counters.inc(`credit_${code}`);
    const peers = seams.peers;
    const believes =
      peers === undefined ? undefined : (incarnation: number) => believesIncarnation(peers, h, incarnation);
    edges.set(
      h,
      new CreditSender({
        transport: seams.transport,
        clock: seams.clock,
        sender: config.writerId,
        holder: h,
        volume: config.volume,
        lane: spec.lane,
        retryMs: 20,
        session: config.term,
        onReset,
        onMalformed,
        onRefused: onMalformed,
        believes,
        attest: seams.attest,
      }),
    );
  }
  const first = spec.firstSeq ?? 1;
  const senders = [...edges.values()];
  return {
    spec,
    senders,
    edges,
    obligations,
    sendLogs,
    resendBackoff,
    retention: new UnitRetention(),
    next: first,
    pending: [],
    pendingBytes: 0,
    pendingTs: [],
    proven: new Map(),
    runs: [],
    confirmed: 0,
  };
}

/**
 * Splits a write of `data` at `lba` over the lanes (`ordered` by first LBA). Throws
 * WriteRejectedError for a bad request or when a block lies outside every lane.
 */
export function splitWrite(
  ordered: readonly WriterLane[],
  volume: string,
  lba: number,
  data: Uint8Array,
): { lane: WriterLane; lba: number; data: Uint8Array }[] {
  if (!(data instanceof Uint8Array) || data.length === 0 || data.length % BLOCK_SIZE !== 0) {
    throw new WriteRejectedError(`data must be a positive multiple of ${BLOCK_SIZE} bytes`, {
      length: (data as Uint8Array)?.length,
    });
  }
  if (!Number.isSafeInteger(lba) || lba < 0)
    throw new WriteRejectedError("lba must be a non-negative integer", { lba });
  const blocks = data.length / BLOCK_SIZE;
  const out: { lane: WriterLane; lba: number; data: Uint8Array }[] = [];
  let at = lba;
  while (at < lba + blocks) {
    const lane = ordered.find((l) => l.spec.fromLba <= at && at <= l.spec.toLba);
    if (lane === undefined) throw new WriteRejectedError(`lba ${at} belongs to no lane of ${volume}`, { lba: at });
    const end = Math.min(lba + blocks - 1, lane.spec.toLba);
    out.push({ lane, lba: at, data: data.subarray((at - lba) * BLOCK_SIZE, (end - lba + 1) * BLOCK_SIZE) });
    at = end + 1;
  }
  return out;
}
