import { z } from "zod";
import { RangeSet } from "../lanes/range-set.ts";
import {
  evidenceFromTuple,
  evidenceToTuple,
  type EvidenceTuple,
  type ResidencyClaim,
  type ResidencyEvidence,
} from "./evidence.ts";
import { payloadFromTuple, payloadToTuple, type PayloadDescription, type PayloadTuple } from "./source-cut.ts";
import { tokenSchema, uintSchema } from "./token.ts";

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
  | { readonly kind: typeof ReleaseAuthorityKind.retention_contract; readonly contractId: string; readonly expiresAt: number };

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
  return { ...rest, version: CURRENT_RECEIPT_VERSION, prefix: { base: prefixBase, through: f.retained.contiguousThrough(prefixBase) } };
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

const headTuple = z.tuple([uintSchema, uintSchema, uintSchema, uintSchema, uintSchema, uintSchema]).rest(z.unknown());
const receiptTuple = z.tuple([
  z.literal(ReceiptVersion.v1),
  uintSchema,
  uintSchema,
  uintSchema,
  uintSchema,
  uintSchema,
  z.array(z.tuple([uintSchema, uintSchema])).max(4096),
  uintSchema,
  z.number().int().min(-1).max(Number.MAX_SAFE_INTEGER),
  z.unknown(),
  z.unknown(),
  z.tuple([
    tokenSchema,
    z.union([
      z.tuple([z.literal(ReleaseAuthorityKind.control_log), tokenSchema]),
      z.tuple([z.literal(ReleaseAuthorityKind.retention_contract), tokenSchema, uintSchema]),
    ]),
  ]),
  z.array(z.tuple([z.string().min(1).max(64), z.boolean(), z.instanceof(Uint8Array)])).max(32),
]);

/** Reads only the declared version of a positional receipt (undefined when not even that parses). */
export function receiptTupleVersion(raw: unknown): number | undefined {
  const r = headTuple.safeParse(raw);
  return r.success ? r.data[0] : undefined;
}

/**
 * Decodes a positional v1 receipt for the given holder and stream. Throws a ZodError (or
 * InvalidRangeError) when malformed, including a stated prefix that the ranges do not support.
 */
export function receiptFromTuple(raw: unknown, holder: HolderIdentity, volume: string, lane: string): CustodyReceipt<ResidencyClaim> {
  const t = receiptTuple.parse(raw);
  const retained = RangeSet.fromJSON(t[6]);
  if (JSON.stringify(retained.toJSON()) !== JSON.stringify(t[6])) throw invalid("retained ranges are not in canonical (sorted, merged) form");
  const prefix = { base: t[7], through: t[8] };
  if (retained.contiguousThrough(prefix.base) !== prefix.through) throw invalid("stated contiguous prefix does not match retained ranges");
  const [obligationId, auth] = t[11];
  return {
    version: t[0],
    holder,
    volume,
    lane,
    receiptSeq: t[1],
    issuedAt: t[2],
    writerTerm: t[3],
    topologyEpoch: t[4],
    policyGeneration: t[5],
    retained,
    prefix,
    payload: payloadFromTuple(t[9]),
    residency: evidenceFromTuple(t[10]),
    obligation: {
      obligationId,
      releaseAuthority: auth[0] === "control_log" ? { kind: auth[0], region: auth[1] } : { kind: auth[0], contractId: auth[1], expiresAt: auth[2] },
    },
    extensions: t[12].map(([kind, required, body]) => ({ kind, required, body })),
  };
}

function invalid(message: string): z.ZodError {
  return new z.ZodError([{ code: "custom", path: ["receipt"], message, input: undefined }]);
}
