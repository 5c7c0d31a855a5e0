import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { CustodyError } from "../../../core/index.ts";
import { BLOCK_SIZE } from "../../../core/index.ts";

/**
 * The plaintext inside a transport unit's payload: the volume writes that make up the unit's
 * records (one lane sequence per write), each with its LSN, LBA and the full block data (memo I6:
 * the replication wire carries full data). Sealed with AES-256-GCM under the volume's data key;
 * the unit identity (volume, lane, term, first/last seq) is the associated data, so a payload
 * cannot be replayed under another unit's header.
 */

/** One write carried by a unit. `data` is a whole number of 4 KiB blocks. */
export interface WriteRecord {
  readonly seq: number;
  readonly lsn: number;
  readonly lba: number;
  readonly data: Uint8Array;
}

/** Thrown when a payload cannot be decrypted or decoded (wrong key, tampering, truncation). */
export class PayloadDecryptError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("payload_decrypt_failed", message, detail);
  }
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER = 8 + 8 + 4 + 4; // seq, lsn, lba, byte length

/** Associated data binding a payload to its unit identity. */
function aad(volume: string, lane: string, term: number, firstSeq: number, lastSeq: number): Buffer {
  return Buffer.from(`${volume}\0${lane}\0${term}\0${firstSeq}\0${lastSeq}`, "utf8");
}

/** Encodes records (plaintext). Pure. */
export function encodeRecords(records: readonly WriteRecord[]): Uint8Array {
  let n = 4;
  for (const r of records) n += HEADER + r.data.length;
  const out = Buffer.alloc(n);
  let o = out.writeUInt32BE(records.length, 0);
  for (const r of records) {
    o = out.writeDoubleBE(r.seq, o);
    o = out.writeDoubleBE(r.lsn, o);
    o = out.writeUInt32BE(r.lba, o);
    o = out.writeUInt32BE(r.data.length, o);
    out.set(r.data, o);
    o += r.data.length;
  }
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** Decodes records; throws PayloadDecryptError on a malformed plaintext. */
export function decodeRecords(plain: Uint8Array): WriteRecord[] {
  const b = Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength);
  const bad = (why: string) => new PayloadDecryptError(`payload records are malformed: ${why}`, {});
  if (b.length < 4) throw bad("too short");
  const count = b.readUInt32BE(0);
  const out: WriteRecord[] = [];
  let o = 4;
  for (let i = 0; i < count; i++) {
    if (o + HEADER > b.length) throw bad("truncated header");
    const seq = b.readDoubleBE(o);
    const lsn = b.readDoubleBE(o + 8);
    const lba = b.readUInt32BE(o + 16);
    const len = b.readUInt32BE(o + 20);
    o += HEADER;
    if (len === 0 || len % BLOCK_SIZE !== 0 || o + len > b.length) throw bad("bad data length");
    out.push({ seq, lsn, lba, data: new Uint8Array(b.subarray(o, o + len)) });
    o += len;
  }
  if (o !== b.length) throw bad("trailing bytes");
  return out;
}

/** Identity of the unit a payload belongs to. */
export interface PayloadIdentity {
  readonly volume: string;
  readonly lane: string;
  readonly term: number;
  readonly firstSeq: number;
  readonly lastSeq: number;
}

/** Encrypts records under `key` (32 bytes): iv ‖ ciphertext ‖ tag. A fresh random IV per unit. */
export function sealPayload(key: Uint8Array, id: PayloadIdentity, records: readonly WriteRecord[]): Uint8Array {
  const iv = randomBytes(IV_BYTES);
  const c = createCipheriv("aes-256-gcm", key, iv);
  c.setAAD(aad(id.volume, id.lane, id.term, id.firstSeq, id.lastSeq));
  const body = Buffer.concat([iv, c.update(encodeRecords(records)), c.final(), c.getAuthTag()]);
  return new Uint8Array(body.buffer, body.byteOffset, body.length);
}

/**
 * Decrypts and decodes a payload. Throws PayloadDecryptError when the key is wrong, the payload
 * was altered or moved under another unit identity, or the plaintext is malformed.
 */
export function openPayload(key: Uint8Array, id: PayloadIdentity, payload: Uint8Array): WriteRecord[] {
  const recs = decryptRecords(key, id, payload);
  if (recs.length !== id.lastSeq - id.firstSeq + 1 || recs.some((r, i) => r.seq !== id.firstSeq + i)) {
    throw new PayloadDecryptError("payload records do not match the unit's sequence range", { ...id });
  }
  return recs;
}

/**
 * Opens a derived (coalesced) unit's payload (issue #22): the surviving records of the raw window
 * `firstSeq..lastSeq`, fewer than one per sequence, in non-decreasing seq order inside the window
 * (a partly superseded write keeps several runs under its own seq). Throws PayloadDecryptError.
 */
export function openCoalescedPayload(key: Uint8Array, id: PayloadIdentity, payload: Uint8Array): WriteRecord[] {
  const recs = decryptRecords(key, id, payload);
  if (recs.some((r, i) => r.seq < id.firstSeq || r.seq > id.lastSeq || (i > 0 && r.seq < recs[i - 1]!.seq))) {
    throw new PayloadDecryptError("coalesced records lie outside the unit's window or out of order", { ...id });
  }
  return recs;
}

function decryptRecords(key: Uint8Array, id: PayloadIdentity, payload: Uint8Array): WriteRecord[] {
  if (payload.length < IV_BYTES + TAG_BYTES)
    throw new PayloadDecryptError("payload too short", { length: payload.length });
  const b = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const d = createDecipheriv("aes-256-gcm", key, b.subarray(0, IV_BYTES));
  d.setAAD(aad(id.volume, id.lane, id.term, id.firstSeq, id.lastSeq));
  d.setAuthTag(b.subarray(b.length - TAG_BYTES));
  let plain: Buffer;
  try {
    plain = Buffer.concat([d.update(b.subarray(IV_BYTES, b.length - TAG_BYTES)), d.final()]);
  } catch {
    throw new PayloadDecryptError("payload does not authenticate under this key and unit identity", { ...id });
  }
  return decodeRecords(new Uint8Array(plain.buffer, plain.byteOffset, plain.length));
}
