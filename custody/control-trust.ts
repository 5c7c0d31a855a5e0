import type { KeyObject } from "node:crypto";
import { ControlFenceCode } from "./control-error.ts";
import { ControlEventType } from "./control-event.ts";
import type { ControlLogEntry, ControlState, EntrySignature } from "./control-records.ts";
import { volumeScopeProblem } from "./control-scope.ts";
import { ED25519_SIGNATURE_BYTES, publicKeyFromRaw, signBytes, verifyBytes } from "./signing.ts";
export type { EntrySignature } from "./control-records.ts";

/**
 * Who may write the control log. Readers that hold a trust root fold only signed entries:
 * an operator key (given to every reader out of band, at bootstrap) signs anything, in particular
 * `admit_controller`, which hands a controller's key and volumes to the log; an admitted
 * controller signs every other event type, but only for the volumes it was admitted for (see
 * control-scope.ts: an event touching another volume is skipped as `not_authorized_for_volume`).
 * The signer must also be the author the event names (`controller`), so a signature cannot be
 * lifted onto another author's event. Without a trust root (unit tests, the
 * simulator) the log is read unsigned, as before.
 *
 * The signature covers the entry's hash (SHA-256 of the event's canonical bytes, which names the
 * previous event's hash) and the log position it is committed at (the expected last sequence + 1;
 * both stores assign exactly that): a signed entry published again lands at another position and
 * no longer verifies, so a replay is skipped instead of breaking the chain.
 */
export interface ControlTrust {
  /** Operator id → Ed25519 public key. */
  readonly operators: Readonly<Record<string, KeyObject>>;
}

/** A principal that signs what it commits: its id (the events' `controller` field) and private key. */
export interface ControlSigner {
  readonly id: string;
  readonly privateKey: KeyObject;
}

/** Event types only an operator may sign. */
const OPERATOR_ONLY: ReadonlySet<string> = new Set([ControlEventType.admit_controller]);

/** The signed statement: the entry's hash (32 bytes) followed by its log position (8 bytes, big-endian). */
function signedBytes(hashHex: string, seq: number): Uint8Array {
  const out = new Uint8Array(40);
  out.set(Buffer.from(hashHex, "hex"), 0);
  new DataView(out.buffer).setBigUint64(32, BigInt(seq));
  return out;
}

/** Signs an entry's hash (hex SHA-256 of the canonical event bytes) at log position `seq`. */
export function signEntryHash(hashHex: string, seq: number, signer: ControlSigner): EntrySignature {
  return { signer: signer.id, signature: signBytes(signer.privateKey, signedBytes(hashHex, seq)) };
}

/** True when `signature` is a valid Ed25519 signature by `key` of the entry hash `hashHex` at position `seq`. */
export function entrySignatureVerifies(key: KeyObject, hashHex: string, seq: number, signature: Uint8Array): boolean {
  return signature.byteLength === ED25519_SIGNATURE_BYTES && verifyBytes(key, signedBytes(hashHex, seq), signature);
}

/**
 * Why a signed log's reader must skip `entry`, or undefined when a trusted principal signed it and
 * may commit it (an operator anything; a controller what its admitted volumes cover). Pure.
 */
export function signatureProblem(
  s: ControlState,
  entry: ControlLogEntry,
  trust: ControlTrust,
): { code: ControlFenceCode; message: string } | undefined {
  const sig = entry.signature;
  if (sig === undefined)
    return {
      code: ControlFenceCode.unsigned_event,
      message: `entry ${entry.seq} (${entry.event.type}) carries no signature`,
    };
  if (sig.signer !== entry.event.controller) {
    return {
      code: ControlFenceCode.signer_not_allowed,
      message: `entry ${entry.seq} names ${entry.event.controller} as author but is signed by ${sig.signer}`,
    };
  }
  const operator = trust.operators[sig.signer];
  const controller = operator === undefined ? s.controllers?.[sig.signer] : undefined;
  if (operator === undefined && controller === undefined)
    return {
      code: ControlFenceCode.signer_not_allowed,
      message: `entry ${entry.seq} is signed by ${sig.signer}, neither an operator nor an admitted controller`,
    };
  if (operator === undefined && OPERATOR_ONLY.has(entry.event.type))
    return {
      code: ControlFenceCode.signer_not_allowed,
      message:
        `only an operator may commit ${entry.event.type} ` + `(entry ${entry.seq}, signed by controller ${sig.signer})`,
    };
  let key: KeyObject;
  try {
    key = operator ?? publicKeyFromRaw(controller!.publicKey);
  } catch {
    return {
      code: ControlFenceCode.bad_signature,
      message: `entry ${entry.seq}: the admitted key of ${sig.signer} is unusable`,
    };
  }
  if (
    sig.signature.byteLength !== ED25519_SIGNATURE_BYTES ||
    !verifyBytes(key, signedBytes(entry.hash, entry.seq), sig.signature)
  ) {
    return {
      code: ControlFenceCode.bad_signature,
      message:
        `entry ${entry.seq}: signature of ${sig.signer} does not verify here (forged, or replayed from ` +
        `another position)`,
    };
  }
  if (operator === undefined) {
    const outside = volumeScopeProblem(s, sig.signer, entry.event);
    if (outside !== undefined) return { code: outside.code, message: `entry ${entry.seq}: ${outside.message}` };
  }
  return undefined;
}
