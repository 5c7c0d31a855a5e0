import { listOf, oneOfAt, PositionalError, tokenAt, tupleOf, uintAt } from "./positional.ts";

/**
 * How the retained payload relates to the original log. A coalesced image promises a source cut,
 * not possession of the omitted original records, and must never be read as the raw log.
 */
export const PayloadRepresentation = {
  /** The original WAL records, byte for byte (ciphertext). */
  raw: "raw",
  /** A derived image that omits superseded versions up to a source cut. */
  coalesced: "coalesced",
} as const;
export type PayloadRepresentation = (typeof PayloadRepresentation)[keyof typeof PayloadRepresentation];

/** A base snapshot that recovery from this payload requires (WAL replays on top of it). */
export interface BaseSnapshotRef {
  readonly snapshotId: string;
  readonly volume: string;
  /** The snapshot contains every record of its lane through this sequence. */
  readonly throughSeq: number;
}

/** One member of a consistency cut: this lane of this volume must be recovered through `throughSeq`. */
export interface ConsistencyCut {
  readonly volume: string;
  readonly lane: string;
  readonly throughSeq: number;
}

/**
 * What a recovery needs besides the retained ranges: the base snapshots the payload depends on and
 * the cut across lanes/volumes that makes it consistent. Empty lists mean "no dependency".
 */
export interface SourceCutManifest {
  readonly baseSnapshots: readonly BaseSnapshotRef[];
  readonly consistencyCuts: readonly ConsistencyCut[];
}

/** Raw payload: the original records of the retained ranges. */
export interface RawPayload {
  readonly representation: typeof PayloadRepresentation.raw;
  readonly manifest: SourceCutManifest;
}

/** Coalesced payload: an image equal to the source log applied through `sourceCutSeq`. */
export interface CoalescedPayload {
  readonly representation: typeof PayloadRepresentation.coalesced;
  readonly manifest: SourceCutManifest;
  /** The log sequence whose state the image reproduces; earlier original records are not held. */
  readonly sourceCutSeq: number;
}

/** The payload a receipt describes. */
export type PayloadDescription = RawPayload | CoalescedPayload;

/**
 * Positional form: [representation, [[snapshotId, volume, through]...], [[volume, lane, through]...], sourceCutSeq |
 * null].
 */
export type PayloadTuple = [string, [string, string, number][], [string, string, number][], number | null];

/** Encodes a payload description in version-1 field order. */
export function payloadToTuple(p: PayloadDescription): PayloadTuple {
  return [
    p.representation,
    p.manifest.baseSnapshots.map((b) => [b.snapshotId, b.volume, b.throughSeq]),
    p.manifest.consistencyCuts.map((c) => [c.volume, c.lane, c.throughSeq]),
    p.representation === PayloadRepresentation.coalesced ? p.sourceCutSeq : null,
  ];
}

/**
 * Decodes a payload description. Throws PositionalError when malformed, including a coalesced
 * payload without its source cut or a raw payload that claims one.
 */
export function payloadFromTuple(raw: unknown, path = "payload"): PayloadDescription {
  const t = tupleOf(raw, 4, path);
  const representation = oneOfAt(t[0], [PayloadRepresentation.raw, PayloadRepresentation.coalesced], `${path}.0`);
  const refs = (x: unknown, p: string) =>
    listOf(x, 256, p).map((r, i) => {
      const q = tupleOf(r, 3, `${p}.${i}`);
      return [tokenAt(q[0], `${p}.${i}.0`), tokenAt(q[1], `${p}.${i}.1`), uintAt(q[2], `${p}.${i}.2`)] as const;
    });
  const manifest: SourceCutManifest = {
    baseSnapshots: refs(t[1], `${path}.1`).map(([snapshotId, volume, throughSeq]) => ({
      snapshotId,
      volume,
      throughSeq,
    })),
    consistencyCuts: refs(t[2], `${path}.2`).map(([volume, lane, throughSeq]) => ({ volume, lane, throughSeq })),
  };
  if (representation === PayloadRepresentation.coalesced) {
    if (t[3] === null) throw new PositionalError(`${path}.3`, "coalesced payload without sourceCutSeq");
    return { representation, manifest, sourceCutSeq: uintAt(t[3], `${path}.3`) };
  }
  if (t[3] !== null) throw new PositionalError(`${path}.3`, "raw payload must not carry a sourceCutSeq");
  return { representation, manifest };
}
