import type { KeyObject } from "node:crypto";

/**
 * A bounded memo of signatures that verified, so the same signed bytes are not re-verified by
 * every actor that receives them in one process (the simulator runs the writer, the controller
 * and every holder in one process, and each of them checks each receipt batch).
 *
 * Exact, never approximate: an entry remembers the key and a copy of the message, and a lookup
 * answers true only when the key is the same key (same object or equal key material) and the
 * message is byte-for-byte the same. Ed25519 verification is a pure function of (key, message,
 * signature), so a hit is the answer verification would give. Failures are never remembered.
 */
export class VerifiedSignatures {
  private readonly entries = new Map<string, { key: KeyObject; message: Uint8Array }>();

  constructor(private readonly capacity: number) {}

  /** True when exactly this (key, message, signature) verified before and is still remembered. */
  has(key: KeyObject, message: Uint8Array, signature: Uint8Array): boolean {
    const e = this.entries.get(signatureKey(signature));
    if (e === undefined) return false;
    if (e.key !== key && !e.key.equals(key)) return false;
    return Buffer.compare(e.message, message) === 0;
  }

  /** Remembers a triple that verified; the oldest entry goes when the memo is full. */
  add(key: KeyObject, message: Uint8Array, signature: Uint8Array): void {
    const id = signatureKey(signature);
    this.entries.delete(id);
    this.entries.set(id, { key, message: Uint8Array.from(message) });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Number of remembered signatures. */
  get size(): number {
    return this.entries.size;
  }
}

function signatureKey(signature: Uint8Array): string {
  return Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength).toString("latin1");
}
