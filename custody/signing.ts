import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { CustodyError } from "../core/index.ts";
import { VerifiedSignatures } from "./verified-signatures.ts";

/** Raw Ed25519 public keys are 32 bytes; signatures are 64 bytes. */
export const ED25519_PUBLIC_KEY_BYTES = 32;
export const ED25519_SIGNATURE_BYTES = 64;

// DER SubjectPublicKeyInfo header for Ed25519 (RFC 8410); the raw 32-byte key follows it.
const SPKI_PREFIX = Uint8Array.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]);

/** Thrown for a key that is not a valid Ed25519 key of the expected form. */
export class InvalidKeyError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super("invalid_key", message, detail);
  }
}

/** A holder's signing identity: the private key stays with the holder, `publicKey` goes into `admit_holder`. */
export interface HolderKeyPair {
  readonly privateKey: KeyObject;
  /** Raw 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
}

/** Generates a fresh Ed25519 key pair (node:crypto, OS randomness). */
export function generateHolderKeyPair(): HolderKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return { privateKey, publicKey: rawPublicKey(publicKey) };
}

/** The raw 32 bytes of an Ed25519 public KeyObject. Throws InvalidKeyError for other key types. */
export function rawPublicKey(key: KeyObject): Uint8Array {
  if (key.asymmetricKeyType !== "ed25519")
    throw new InvalidKeyError("not an Ed25519 key", { type: key.asymmetricKeyType });
  const der = key.export({ format: "der", type: "spki" });
  return new Uint8Array(der.subarray(der.length - ED25519_PUBLIC_KEY_BYTES));
}

// Parsed keys by raw bytes (hex). KeyObjects are immutable, so every caller can share one; sharing
// also lets the verified-signature memo match keys by identity. Bounded: oldest parsed key goes first.
const PARSED_KEYS_MAX = 4096;
const parsedKeys = new Map<string, KeyObject>();

/** A verification KeyObject from a raw 32-byte public key. Throws InvalidKeyError on a wrong length. */
export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.byteLength !== ED25519_PUBLIC_KEY_BYTES) {
    throw new InvalidKeyError(`an Ed25519 public key has ${ED25519_PUBLIC_KEY_BYTES} bytes, got ${raw.byteLength}`, {
      length: raw.byteLength,
    });
  }
  const id = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("hex");
  const cached = parsedKeys.get(id);
  if (cached !== undefined) return cached;
  const der = new Uint8Array(SPKI_PREFIX.length + raw.byteLength);
  der.set(SPKI_PREFIX, 0);
  der.set(raw, SPKI_PREFIX.length);
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(der), format: "der", type: "spki" });
  } catch {
    throw new InvalidKeyError("bytes are not an Ed25519 public key");
  }
  parsedKeys.set(id, key);
  if (parsedKeys.size > PARSED_KEYS_MAX) parsedKeys.delete(parsedKeys.keys().next().value!);
  return key;
}

/** A private KeyObject from PKCS#8 DER bytes (for holders that load their key from a file). */
export function privateKeyFromPkcs8(der: Uint8Array): KeyObject {
  const key = createPrivateKey({ key: Buffer.from(der), format: "der", type: "pkcs8" });
  if (key.asymmetricKeyType !== "ed25519")
    throw new InvalidKeyError("not an Ed25519 private key", { type: key.asymmetricKeyType });
  return key;
}

/** Ed25519 signature (64 bytes) of `message`. Deterministic for a given key and message. */
export function signBytes(privateKey: KeyObject, message: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, privateKey));
}

// Signatures that verified recently in this process (exact memo; see VerifiedSignatures).
const verified = new VerifiedSignatures(4096);

/** True only when `signature` is a valid Ed25519 signature of `message` under `publicKey`. Never throws. */
export function verifyBytes(publicKey: KeyObject, message: Uint8Array, signature: Uint8Array): boolean {
  if (signature.byteLength !== ED25519_SIGNATURE_BYTES) return false;
  if (verified.has(publicKey, message, signature)) return true;
  let ok: boolean;
  try {
    ok = verify(null, message, publicKey, signature);
  } catch {
    return false;
  }
  if (ok) verified.add(publicKey, message, signature);
  return ok;
}
