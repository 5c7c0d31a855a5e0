import type { KeyObject } from "node:crypto";
import { publicKeyFromRaw } from "./signing.ts";
import {
  attests,
  readUnitAttestation,
  UnitAuthCode,
  verifyUnitAttestation,
  type UnitAttestation,
} from "./unit-attestation.ts";

/**
 * Which writer key signs the units of a volume from which term on: the keys a deployment's key
 * authority named when the volume's writers were set up. `keyFor(volume, term)` is the key with the
 * highest `fromTerm` not above `term`, so units a failover's new term wrote verify under the new
 * writer's key and reshipped units of an older term under the key of that term.
 */
export class WriterKeyring {
  private readonly keys = new Map<string, { fromTerm: number; key: KeyObject }[]>();

  /** Names `publicKey` (raw 32 bytes or a KeyObject) as the writer key of `volume` from `fromTerm` on. */
  name(volume: string, fromTerm: number, publicKey: Uint8Array | KeyObject): this {
    const key = publicKey instanceof Uint8Array ? publicKeyFromRaw(publicKey) : publicKey;
    const list = (this.keys.get(volume) ?? []).filter((k) => k.fromTerm !== fromTerm);
    list.push({ fromTerm, key });
    list.sort((a, b) => b.fromTerm - a.fromTerm);
    this.keys.set(volume, list);
    return this;
  }

  /** The writer key for units of `volume` written under `term`, if one is named. */
  keyFor(volume: string, term: number): KeyObject | undefined {
    for (const k of this.keys.get(volume) ?? []) if (k.fromTerm <= term) return k.key;
    return undefined;
  }
}

/** A unit to authenticate: its identity and digest. */
export interface AttestedUnit {
  readonly volume: string;
  readonly lane: string;
  readonly term: number;
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly digest: Uint8Array;
}

/** The verdict on one unit: the attestation token that covers it, or why none does. */
export type UnitAuthVerdict =
  { readonly ok: true; readonly token: string } | { readonly ok: false; readonly code: UnitAuthCode };

/**
 * A holder's check that units are the writer's: each message names the attestations (base64
 * tokens) of its units; each token is verified once against the writer key and remembered (the
 * same token rides with every message of its batch and every hop), and each unit must be listed
 * by one of them. Refusals are returned, never thrown; nothing here changes custody state.
 */
export class UnitAuthenticator {
  /**
   * Verified attestations by token, oldest first (a bounded memory of recent batches), each with
   * the first string seen for its token: verdicts name that one, so the units of a batch that
   * arrived in many messages share one token string wherever they are stored.
   */
  private readonly verified = new Map<string, { readonly a: UnitAttestation; readonly token: string }>();

  constructor(
    private readonly keys: WriterKeyring,
    private readonly remember = 256,
  ) {}

  /**
   * Verdicts for `units`, which arrived in one message with attestation `tokens`. A token that
   * fails makes the units it would cover fail with its code (missing tokens: `unit_unsigned`).
   */
  check(tokens: readonly string[], units: readonly AttestedUnit[]): UnitAuthVerdict[] {
    const good: [string, UnitAttestation][] = [];
    let failure: UnitAuthCode = UnitAuthCode.Unsigned;
    for (const t of tokens) {
      const r = this.verify(t);
      if (typeof r === "string") failure = r;
      else good.push([r.token, r.a]);
    }
    return units.map((u): UnitAuthVerdict => {
      for (const [token, a] of good) if (attests(a, u)) return { ok: true, token };
      return {
        ok: false,
        code: good.length > 0 && failure === UnitAuthCode.Unsigned ? UnitAuthCode.NotAttested : failure,
      };
    });
  }

  /** One token: its verified attestation, or the refusal code. */
  private verify(token: string): { readonly a: UnitAttestation; readonly token: string } | UnitAuthCode {
    const known = this.verified.get(token);
    if (known !== undefined) return known;
    let a: UnitAttestation;
    try {
      a = readUnitAttestation(Buffer.from(token, "base64"));
    } catch {
      return UnitAuthCode.Malformed;
    }
    const key = this.keys.keyFor(a.volume, a.term);
    if (key === undefined) return UnitAuthCode.SignerUnknown;
    if (!verifyUnitAttestation(key, a)) return UnitAuthCode.BadSignature;
    const entry = { a, token };
    this.verified.set(token, entry);
    if (this.verified.size > this.remember) this.verified.delete(this.verified.keys().next().value!);
    return entry;
  }
}
