import { Decoder, Encoder } from "@msgpack/msgpack";
import {
  BIN,
  bytesAt,
  decodeBounded,
  fixstr,
  msgpackHeadEnd,
  readLengthHeader,
  STR,
} from "../transport/protocol/index.ts";
import { MAX_IDENTIFIER_LENGTH } from "../core/index.ts";
import type { KeyObject } from "node:crypto";
import type { ResidencyClaim, ResidencyEvidence } from "./evidence.ts";
import {
  CURRENT_RECEIPT_VERSION,
  ReceiptVersion,
  receiptFromTuple,
  receiptTupleVersion,
  receiptToTuple,
  type CustodyReceipt,
  type HolderIdentity,
} from "./receipt.ts";
import { ReceiptError, ReceiptErrorCode } from "./receipt-error.ts";
import { signBytes } from "./signing.ts";
import { receiptSubject } from "../transport/protocol/index.ts";
import { listOf, PositionalError, stringAt, tokenAt, tupleOf, uintAt } from "./positional.ts";

/** The stream a batch is bound to: it is only valid on this volume, lane and receipt subject. */
export interface ReceiptStream {
  readonly volume: string;
  readonly lane: string;
  /** `custody.v1.receipt.<volume>.<lane>` (see `transport/protocol/subjects.ts`). */
  readonly subject: string;
}

/** The stream of (volume, lane) with its canonical receipt subject. Throws InvalidSubjectError on a bad token. */
export function receiptStream(volume: string, lane: string): ReceiptStream {
  return { volume, lane, subject: receiptSubject(volume, lane) };
}

/**
 * Receipts of one holder incarnation on one stream, signed together. Every receipt inherits the
 * batch's holder, volume and lane, so a relay can only ever speak for itself.
 */
export interface ReceiptBatch<E extends ResidencyClaim = ResidencyEvidence> {
  readonly version: ReceiptVersion;
  readonly stream: ReceiptStream;
  readonly holder: HolderIdentity;
  readonly issuedAt: number;
  /** Strictly increasing `receiptSeq`. */
  readonly receipts: readonly CustodyReceipt<E>[];
}

/** What travels: the exact canonical bytes and the holder's Ed25519 signature over them. */
export interface SignedReceiptBatch {
  readonly body: Uint8Array;
  readonly signature: Uint8Array;
}

/** Largest number of receipts in one batch. */
export const MAX_RECEIPTS_PER_BATCH = 4096;

// Domain separation: these bytes can never be mistaken for another signed structure.
const MAGIC = "custody-receipt-batch";

const encoder = new Encoder();
const decoder = new Decoder({ maxStrLength: 64 * 1024, maxArrayLength: 64 * 1024, maxMapLength: 0, maxExtLength: 0 });

/**
 * Canonical encoding of a batch: msgpack of positional arrays in a fixed field order, so equal
 * batches always give equal bytes. Throws ReceiptError `malformed` when a receipt does not belong
 * to the batch's holder/stream or receipt sequences are not strictly increasing.
 */
export function encodeReceiptBatch(batch: ReceiptBatch<ResidencyClaim>): Uint8Array {
  checkMembers(batch);
  return encoder.encode([
    MAGIC,
    batch.version,
    batch.stream.volume,
    batch.stream.lane,
    batch.stream.subject,
    batch.holder.holderId,
    batch.holder.incarnation,
    batch.issuedAt,
    batch.receipts.map(receiptToTuple),
  ]);
}

/**
 * Decodes canonical batch bytes. Unknown evidence kinds are kept as `unrecognized` (verification
 * refuses them by name). Throws ReceiptError `unsupported_version` for a batch or receipt version
 * this code does not read, and `malformed` for anything else that is not a valid v1 batch.
 */
export function decodeReceiptBatch(body: Uint8Array): ReceiptBatch<ResidencyClaim> {
  let raw: unknown;
  try {
    raw = decodeBounded(decoder, body);
  } catch (err) {
    throw new ReceiptError(ReceiptErrorCode.malformed, "receipt batch is not valid msgpack", {}, { cause: err });
  }
  if (Array.isArray(raw) && raw[0] === MAGIC && raw[1] !== ReceiptVersion.v1) {
    throw new ReceiptError(
      ReceiptErrorCode.unsupported_version,
      `receipt batch version ${String(raw[1])} is not supported`,
      { version: raw[1], supported: [ReceiptVersion.v1] },
    );
  }
  try {
    const t = tupleOf(raw, 9, "batch");
    if (t[0] !== MAGIC) throw new PositionalError("batch.0", "not a receipt batch");
    const volume = tokenAt(t[2], "batch.2");
    const lane = tokenAt(t[3], "batch.3");
    const subject = stringAt(t[4], 1, 512, "batch.4");
    const holder = { holderId: tokenAt(t[5], "batch.5"), incarnation: uintAt(t[6], "batch.6") };
    const issuedAt = uintAt(t[7], "batch.7");
    const decoded = listOf(t[8], MAX_RECEIPTS_PER_BATCH, "batch.8").map((r, i) => {
      const v = receiptTupleVersion(r);
      if (v !== undefined && v !== ReceiptVersion.v1) {
        throw new ReceiptError(ReceiptErrorCode.unsupported_version, `receipt ${i} has version ${v}`, {
          index: i,
          version: v,
          supported: [ReceiptVersion.v1],
        });
      }
      return receiptFromTuple(r, holder, volume, lane, `batch.8.${i}`);
    });
    const batch: ReceiptBatch<ResidencyClaim> = {
      version: ReceiptVersion.v1,
      stream: { volume, lane, subject },
      holder,
      issuedAt,
      receipts: decoded,
    };
    checkMembers(batch);
    return batch;
  } catch (err) {
    if (err instanceof ReceiptError) throw err;
    const path = err instanceof PositionalError ? err.path : undefined;
    throw new ReceiptError(
      ReceiptErrorCode.malformed,
      `receipt batch is malformed: ${(err as Error).message}`,
      { path },
      { cause: err },
    );
  }
}

/** Encodes `batch` canonically and signs the bytes with the holder's Ed25519 key. */
export function signReceiptBatch(batch: ReceiptBatch<ResidencyClaim>, privateKey: KeyObject): SignedReceiptBatch {
  const body = encodeReceiptBatch(batch);
  return { body, signature: signBytes(privateKey, body) };
}

/** Builds a v1 batch for `holder` on `stream` (receipts must already carry the same holder and stream). */
export function makeReceiptBatch(
  stream: ReceiptStream,
  holder: HolderIdentity,
  issuedAt: number,
  receipts: readonly CustodyReceipt[],
): ReceiptBatch {
  return { version: CURRENT_RECEIPT_VERSION, stream, holder, issuedAt, receipts };
}

function checkMembers(batch: ReceiptBatch<ResidencyClaim>): void {
  if (batch.receipts.length > MAX_RECEIPTS_PER_BATCH) {
    throw new ReceiptError(ReceiptErrorCode.malformed, `a batch holds at most ${MAX_RECEIPTS_PER_BATCH} receipts`, {
      count: batch.receipts.length,
    });
  }
  let prev = -1;
  batch.receipts.forEach((r, i) => {
    if (r.holder.holderId !== batch.holder.holderId || r.holder.incarnation !== batch.holder.incarnation) {
      throw new ReceiptError(
        ReceiptErrorCode.malformed,
        `receipt ${i} belongs to another holder incarnation than its batch`,
        { index: i, holder: r.holder },
      );
    }
    if (r.volume !== batch.stream.volume || r.lane !== batch.stream.lane) {
      throw new ReceiptError(ReceiptErrorCode.malformed, `receipt ${i} belongs to another stream than its batch`, {
        index: i,
        volume: r.volume,
        lane: r.lane,
      });
    }
    if (r.receiptSeq <= prev) {
      throw new ReceiptError(
        ReceiptErrorCode.malformed,
        `receipt sequences must increase within a batch (index ${i}: ${r.receiptSeq} after ${prev})`,
        { index: i, receiptSeq: r.receiptSeq },
      );
    }
    prev = r.receiptSeq;
  });
}

/** How `encodeMessage(receiptBatchSpec, …)` begins: fixmap{k: "receipt-batch", v: 1, b: fixmap{body: bin…}}. */
const MESSAGE_HEAD = Uint8Array.from([
  0x83,
  ...fixstr("k"),
  ...fixstr("receipt-batch"),
  ...fixstr("v"),
  0x01,
  ...fixstr("b"),
  0x82,
  ...fixstr("body"),
]);
/** How a v1 batch body begins: the 9-tuple, MAGIC, the version. */
const BODY_HEAD = Uint8Array.from([0x99, ...fixstr(MAGIC), ReceiptVersion.v1]);

/**
 * The holder id a `receipt-batch` message names, read from the head of its bytes without decoding
 * the batch (or verifying anything): a holder that acts only on some holders' receipts uses it to
 * pass over the rest. Returns undefined unless the bytes begin exactly as this code encodes a v1
 * batch; the full decoder then decides, and counts what is wrong.
 */
export function receiptBatchSender(message: Uint8Array): string | undefined {
  if (!bytesAt(message, 0, MESSAGE_HEAD)) return undefined;
  const bodyLength = readLengthHeader(message, MESSAGE_HEAD.length, BIN);
  let o = msgpackHeadEnd.o;
  const end = o + bodyLength;
  if (bodyLength < 0 || end > message.length || !bytesAt(message, o, BODY_HEAD)) return undefined;
  o += BODY_HEAD.length;
  // Past volume, lane and subject to the holder id.
  for (let field = 0; field < 3; field++) {
    const n = readLengthHeader(message, o, STR);
    if (n < 0) return undefined;
    o = msgpackHeadEnd.o + n;
  }
  const n = readLengthHeader(message, o, STR);
  const start = msgpackHeadEnd.o;
  if (n < 1 || n > MAX_IDENTIFIER_LENGTH || start + n > end) return undefined;
  let id = "";
  for (let i = start; i < start + n; i++) {
    const c = message[i]!;
    if (c >= 0x80) return undefined;
    id += String.fromCharCode(c);
  }
  return id;
}
