import { createHmac } from "node:crypto";
import { RangeSet } from "../lanes/index.ts";
import type { TransportUnit } from "../lanes/index.ts";

/**
 * The keyed digest a retention audit asks for: HMAC-SHA-256 keyed by the challenge's fresh nonce,
 * over every retained unit that holds a challenged sequence, in first-sequence order, each as
 * `firstSeq (u64) ‖ lastSeq (u64) ‖ term (u64) ‖ payload length (u32) ‖ payload`. The nonce is
 * new for every challenge, so the answer cannot be precomputed or kept from an earlier audit, and
 * it covers the payload itself: a holder that kept only headers or unit digests cannot produce it.
 * Used alike by the holder (answering) and the controller (recomputing from another source's bytes).
 */

/** What of a unit the audit digest reads. */
export type AuditedUnit = Pick<TransportUnit, "firstSeq" | "lastSeq" | "term" | "payload">;

/** The digest, the challenged sequences it covers and the payload bytes it read. */
export interface AuditDigest {
  readonly digest: Uint8Array;
  readonly covered: RangeSet;
  readonly bytesRead: number;
}

/** Length of the audit digest in bytes (HMAC-SHA-256). */
export const AUDIT_DIGEST_BYTES = 32;

/**
 * The units of `units` that hold a sequence of `seqs`, each once (a holder may keep a re-sent unit
 * twice), ordered by first sequence. Pure.
 */
export function auditedUnits<U extends AuditedUnit>(units: readonly U[], seqs: RangeSet): U[] {
  const seen = new Set<string>();
  const out: U[] = [];
  for (const u of units) {
    const key = `${u.firstSeq}-${u.lastSeq}`;
    if (seen.has(key) || !seqs.overlaps(u.firstSeq, u.lastSeq)) continue;
    seen.add(key);
    out.push(u);
  }
  return out.sort((a, b) => a.firstSeq - b.firstSeq || a.lastSeq - b.lastSeq);
}

/** Computes the audit digest of `units` for challenged `seqs` under `nonce`. Pure. */
export function auditDigest(nonce: Uint8Array, units: readonly AuditedUnit[], seqs: RangeSet): AuditDigest {
  const mac = createHmac("sha256", nonce);
  const header = Buffer.alloc(28);
  let covered = RangeSet.EMPTY;
  let bytesRead = 0;
  for (const u of auditedUnits(units, seqs)) {
    header.writeBigUInt64BE(BigInt(u.firstSeq), 0);
    header.writeBigUInt64BE(BigInt(u.lastSeq), 8);
    header.writeBigUInt64BE(BigInt(u.term), 16);
    header.writeUInt32BE(u.payload.byteLength, 24);
    mac.update(header);
    mac.update(u.payload);
    bytesRead += u.payload.byteLength;
    covered = covered.union(RangeSet.of(u.firstSeq, u.lastSeq).intersect(seqs));
  }
  return { digest: new Uint8Array(mac.digest()), covered, bytesRead };
}
