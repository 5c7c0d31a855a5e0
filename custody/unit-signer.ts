import type { KeyObject } from "node:crypto";
import { decodeMessage, fastDecodeUnit, unitSpec } from "../protocol/index.ts";
import { MAX_ATTESTED_UNITS, signUnitAttestation, type UnitClaim } from "./unit-attestation.ts";

/**
 * The writer's side of unit authentication: given the encoded units a sender is about to send
 * (one lane), returns one attestation token per unit — one signature per run of units of the same
 * term (a reshipped older-term unit starts a run of its own). Shaped as the credit sender's
 * `attest` option.
 */
export function writerUnitSigner(writerKey: KeyObject): { readonly maxUnits: number; sign(units: readonly Uint8Array[]): string[] } {
  return {
    maxUnits: MAX_ATTESTED_UNITS,
    sign(units) {
      const decoded = units.map((d) => fastDecodeUnit(d) ?? decodeMessage(unitSpec, d));
      const tokens: string[] = new Array(units.length);
      for (let at = 0; at < decoded.length; ) {
        const first = decoded[at]!;
        let end = at;
        const claims: UnitClaim[] = [];
        while (end < decoded.length && decoded[end]!.term === first.term && decoded[end]!.volume === first.volume && decoded[end]!.lane === first.lane) {
          const u = decoded[end++]!;
          claims.push({ firstSeq: u.firstSeq, lastSeq: u.lastSeq, digest: u.digest });
        }
        const token = Buffer.from(signUnitAttestation(writerKey, first.volume, first.lane, first.term, claims)).toString("base64");
        tokens.fill(token, at, end);
        at = end;
      }
      return tokens;
    },
  };
}
