import { createPrivateKey, createPublicKey, hkdfSync, type KeyObject } from "node:crypto";
import { decodeMessage, fastDecodeUnit, unitSpec } from "../transport/protocol/index.ts";
import { rawPublicKey } from "./signing.ts";
import { MAX_ATTESTED_UNITS, signUnitAttestation, type UnitClaim } from "./unit-attestation.ts";

// PKCS#8 DER header of an Ed25519 private key (RFC 8410); the 32-byte seed follows it.
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/**
 * The volume's writer key, derived from its data key (HKDF-SHA256, a label of its own): whoever
 * the key authority gives the data key to — the volume's writer, a failover writer of a later
 * term, recovery — signs units with the same key, and the holders, which never see the data key,
 * are given only the public half. Knowing the public key reveals nothing of the data key.
 */
export function writerSigningKey(dataKey: Uint8Array): {
  readonly privateKey: KeyObject;
  readonly publicKey: Uint8Array;
} {
  const seed = Buffer.from(hkdfSync("sha256", dataKey, Buffer.alloc(0), "custody.v1 writer unit signing key", 32));
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
  return { privateKey, publicKey: rawPublicKey(createPublicKey(privateKey)) };
}

/**
 * The writer's side of unit authentication: given the encoded units a sender is about to send
 * (one lane), returns one attestation token per unit — one signature per run of units of the same
 * term (a reshipped older-term unit starts a run of its own). Shaped as the credit sender's
 * `attest` option.
 */
export function writerUnitSigner(writerKey: KeyObject): {
  readonly maxUnits: number;
  sign(units: readonly Uint8Array[]): string[];
} {
  return {
    maxUnits: MAX_ATTESTED_UNITS,
    sign(units) {
      const decoded = units.map((d) => fastDecodeUnit(d) ?? decodeMessage(unitSpec, d));
      const tokens: string[] = new Array(units.length);
      for (let at = 0; at < decoded.length;) {
        const first = decoded[at]!;
        let end = at;
        const claims: UnitClaim[] = [];
        while (
          end < decoded.length &&
          decoded[end]!.term === first.term &&
          decoded[end]!.volume === first.volume &&
          decoded[end]!.lane === first.lane
        ) {
          const u = decoded[end++]!;
          claims.push({ firstSeq: u.firstSeq, lastSeq: u.lastSeq, digest: u.digest });
        }
        const token = Buffer.from(
          signUnitAttestation(writerKey, first.volume, first.lane, first.term, claims),
        ).toString("base64");
        tokens.fill(token, at, end);
        at = end;
      }
      return tokens;
    },
  };
}
