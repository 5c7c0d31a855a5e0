import { UnitAuthenticator, type AttestedUnit, type UnitAuthVerdict, type WriterKeyring } from "../../custody/index.ts";
import type { InboundUnit } from "../../transport/index.ts";
import type { HolderLane } from "./holder-lane.ts";

/**
 * The holder's side of writer-authenticated units: one authenticator per writer keyring (so the
 * verified attestations are shared by all lanes of a holder), and per lane the attestation each
 * admitted unit came with, so a resend to an edge carries the writer's signature as the first
 * forward did. Kept beside the lane, not inside it, so the lane's own state stays the arena's.
 * The memory is bounded; what outlives it is the copy a spill record stores beside each unit
 * (segment form version 2), which a restarted holder reads back with the units.
 */

const authenticators = new WeakMap<WriterKeyring, UnitAuthenticator>();
const remembered = new WeakMap<HolderLane, Map<number, string>>();
/** Attestations remembered per lane (by unit first sequence), oldest dropped first. */
const REMEMBER_PER_LANE = 65_536;

/** Verdicts for the decoded units of one message (undefined where no keyring: units are not checked). */
export function authenticateUnits(keys: WriterKeyring | undefined, tokens: readonly string[], units: readonly InboundUnit[]): (UnitAuthVerdict | undefined)[] | undefined {
  if (keys === undefined) return undefined;
  const decoded = units.filter((u) => u.unit !== undefined).map((u) => u.unit!);
  const verdicts = authenticatorFor(keys).check(tokens, decoded);
  let i = 0;
  return units.map((u) => (u.unit === undefined ? undefined : verdicts[i++]));
}

/** Verdicts for already decoded units (a custody transfer offer's); undefined where no keyring. */
export function authenticateDecoded(keys: WriterKeyring | undefined, tokens: readonly string[], units: readonly AttestedUnit[]): UnitAuthVerdict[] | undefined {
  return keys === undefined ? undefined : authenticatorFor(keys).check(tokens, units);
}

function authenticatorFor(keys: WriterKeyring): UnitAuthenticator {
  let auth = authenticators.get(keys);
  if (auth === undefined) authenticators.set(keys, (auth = new UnitAuthenticator(keys)));
  return auth;
}

/** Remembers the attestation `token` of the unit starting at `firstSeq` on lane `hl`. */
export function rememberAttestation(hl: HolderLane, firstSeq: number, token: string): void {
  let m = remembered.get(hl);
  if (m === undefined) remembered.set(hl, (m = new Map()));
  m.delete(firstSeq);
  m.set(firstSeq, token);
  if (m.size > REMEMBER_PER_LANE) m.delete(m.keys().next().value!);
}

/** The attestation the unit starting at `firstSeq` of lane `hl` arrived with, if remembered. */
export function attestationOf(hl: HolderLane, firstSeq: number): string | undefined {
  return remembered.get(hl)?.get(firstSeq);
}
