import { RangeSet } from "../lanes/index.ts";
import {
  evidenceFromTuple,
  evidenceToTuple,
  type EvidenceTuple,
  type ResidencyClaim,
  type ResidencyEvidence,
} from "./evidence.ts";
import { payloadFromTuple, payloadToTuple, type PayloadDescription, type PayloadTuple } from "./source-cut.ts";
import {
  boolAt,
  bytesAt,
  intAt,
  listOf,
  PositionalError,
  rangesAt,
  stringAt,
  tokenAt,
  tupleOf,
  uintAt,
} from "./positional.ts";

/**
 * Receipt format versions. A peer decodes only versions it lists; anything else is
 * `unsupported_version`, so an older peer can never misread a newer receipt's evidence.
 */
export const ReceiptVersion = { v1: 1 } as const;
export type ReceiptVersion = (typeof ReceiptVersion)[keyof typeof ReceiptVersion];

/** The version this code writes. */
export const CURRENT_RECEIPT_VERSION: ReceiptVersion = ReceiptVersion.v1;

/** Who may let the holder forget the obligation's bytes. */
export const ReleaseAuthorityKind = {
  /** Only a committed `release_ranges` event in this region's fenced control log. */
  control_log: "control_log",
  /** An agreed retention contract that expires at a stated time (the sender kept its copy). */
  retention_contract: "retention_contract",
} as const;
export type ReleaseAuthorityKind = (typeof ReleaseAuthorityKind)[keyof typeof ReleaseAuthorityKind];

/** The authority needed to release an obligation. */
export type ReleaseAuthority =
  | { readonly kind: typeof ReleaseAuthorityKind.control_log; readonly region: string }
  | {
      readonly kind: typeof ReleaseAuthorityKind.retention_contract;
      readonly contractId: string;
      readonly expiresAt: number;
    };

/** The retention obligation a receipt reports progress on, and how it may be released. */
export interface RetentionObligation {
  readonly obligationId: string;
  readonly releaseAuthority: ReleaseAuthority;
}

/**
 * A forward-compatible extension. An extension whose kind the verifier does not know is ignored
 * when `required` is false and makes the receipt unsupported when `required` is true.
 */
export interface ReceiptExtension {
  readonly kind: string;
  readonly required: boolean;
  readonly body: Uint8Array;
}

/** Extension kinds understood by version 1 (none yet: every required extension is unsupported). */
export const KNOWN_EXTENSION_KINDS: ReadonlySet<string> = new Set<string>();

/** A holder process: its stable id and the incarnation (restart count) that issued the receipt. */
export interface HolderIdentity {
  readonly holderId: string;
  readonly incarnation: number;
}

/**
 * One holder's signed statement of what it retains for one obligation at one residency on one
 * stream (volume, lane). It states exact retained ranges and the contiguous prefix from
 * `prefix.base` — never a bare high-water mark. `E` is `ResidencyEvidence` once verified; decoded
 * but unverified receipts may carry `UnrecognizedEvidence`.
 */
export interface CustodyReceipt<E extends ResidencyClaim = ResidencyEvidence> {
  readonly version: ReceiptVersion;
  readonly holder: HolderIdentity;
  readonly volume: string;
  readonly lane: string;
  /** Per holder incarnation and stream, strictly increasing; a higher one supersedes a lower one. */
  readonly receiptSeq: number;
  readonly issuedAt: number;
  readonly writerTerm: number;
  readonly topologyEpoch: number;
  readonly policyGeneration: number;
  readonly retained: RangeSet;
  /** `through` is the highest seq with every `base..through` retained (`base - 1` when none). */
  readonly prefix: { readonly base: number; readonly through: number };
  readonly payload: PayloadDescription;
  readonly residency: E;
  readonly obligation: RetentionObligation;
  readonly extensions: readonly ReceiptExtension[];
}

/** Fields a holder supplies; `version` and `prefix.through` are derived by `makeReceipt`. */
export type ReceiptFields = Omit<CustodyReceipt, "version" | "prefix"> & { readonly prefixBase: number };

/** Builds a v1 receipt, deriving the contiguous prefix from the retained ranges. */
export function makeReceipt(f: ReceiptFields): CustodyReceipt {
  const { prefixBase, ...rest } = f;
  return {
    ...rest,
    version: CURRENT_RECEIPT_VERSION,
    prefix: { base: prefixBase, through: f.retained.contiguousThrough(prefixBase) },
  };
}

// ---- canonical positional form (the holder and stream come from the batch header) ----

/** Positional v1 form of one receipt, in its fixed field order. */
export type ReceiptTuple = [
  number, // version
  number, // receiptSeq
  number, // issuedAt
  number, // writerTerm
  number, // topologyEpoch
  number, // policyGeneration
  [number, number][], // retained ranges
  number, // prefix base
  number, // prefix through
  PayloadTuple,
  EvidenceTuple,
  [string, [string, string | number] | [string, string, number]], // obligation id, authority
  [string, boolean, Uint8Array][], // extensions
];

/** Encodes a receipt positionally (deterministic: arrays only, fixed order). */
export function receiptToTuple(r: CustodyReceipt<ResidencyClaim>): ReceiptTuple {
  const a = r.obligation.releaseAuthority;
  return [
    r.version,
    r.receiptSeq,
    r.issuedAt,
    r.writerTerm,
    r.topologyEpoch,
    r.policyGeneration,
    r.retained.toJSON(),
    r.prefix.base,
    r.prefix.through,
    payloadToTuple(r.payload),
    evidenceToTuple(r.residency),
    [r.obligation.obligationId, a.kind === "control_log" ? [a.kind, a.region] : [a.kind, a.contractId, a.expiresAt]],
    r.extensions.map((x) => [x.kind, x.required, x.body]),
  ];
}

/** Reads only the declared version of a positional receipt (undefined when not even that parses). */
export function receiptTupleVersion(raw: unknown): number | undefined {
  return Array.isArray(raw) && typeof raw[0] === "number" ? raw[0] : undefined;
}

/**
 * Decodes a positional v1 receipt for the given holder and stream. Throws PositionalError when
 * malformed, including ranges not in canonical form or a stated prefix the ranges do not support.
 */
export function receiptFromTuple(
  raw: unknown,
  holder: HolderIdentity,
  volume: string,
  lane: string,
  path = "receipt",
): CustodyReceipt<ResidencyClaim> {
  const t = tupleOf(raw, 13, path);
  if (t[0] !== ReceiptVersion.v1) throw new PositionalError(`${path}.0`, `unsupported receipt version ${String(t[0])}`);
  const retained = RangeSet.fromJSON(rangesAt(t[6], 4096, `${path}.6`));
  const prefix = { base: uintAt(t[7], `${path}.7`), through: intAt(t[8], -1, `${path}.8`) };
  if (retained.contiguousThrough(prefix.base) !== prefix.through)
    throw new PositionalError(`${path}.8`, "stated contiguous prefix does not match retained ranges");
  const ob = tupleOf(t[11], 2, `${path}.11`);
  const auth = listOf(ob[1], 3, `${path}.11.1`);
  let releaseAuthority: ReleaseAuthority;
  if (auth[0] === ReleaseAuthorityKind.control_log) {
    tupleOf(auth, 2, `${path}.11.1`);
    releaseAuthority = { kind: auth[0], region: tokenAt(auth[1], `${path}.11.1.1`) };
  } else if (auth[0] === ReleaseAuthorityKind.retention_contract) {
    tupleOf(auth, 3, `${path}.11.1`);
    releaseAuthority = {
      kind: auth[0],
      contractId: tokenAt(auth[1], `${path}.11.1.1`),
      expiresAt: uintAt(auth[2], `${path}.11.1.2`),
    };
  } else throw new PositionalError(`${path}.11.1.0`, "unknown release authority");
  return {
    version: ReceiptVersion.v1,
    holder,
    volume,
    lane,
    receiptSeq: uintAt(t[1], `${path}.1`),
    issuedAt: uintAt(t[2], `${path}.2`),
    writerTerm: uintAt(t[3], `${path}.3`),
    topologyEpoch: uintAt(t[4], `${path}.4`),
    policyGeneration: uintAt(t[5], `${path}.5`),
    retained,
    prefix,
    payload: payloadFromTuple(t[9], `${path}.9`),
    residency: evidenceFromTuple(t[10], `${path}.10`),
    obligation: { obligationId: tokenAt(ob[0], `${path}.11.0`), releaseAuthority },
    extensions: listOf(t[12], 32, `${path}.12`).map((x, i) => {
      const e = tupleOf(x, 3, `${path}.12.${i}`);
      return {
        kind: stringAt(e[0], 1, 64, `${path}.12.${i}.0`),
        required: boolAt(e[1], `${path}.12.${i}.1`),
        body: bytesAt(e[2], `${path}.12.${i}.2`),
      };
    }),
  };
}
