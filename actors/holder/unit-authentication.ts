import { UnitAuthenticator, type AttestedUnit, type UnitAuthVerdict, type WriterKeyring } from "../../custody/index.ts";
import type { InboundUnit } from "../../transport/index.ts";

/**
 * The holder's side of writer-authenticated units: one authenticator per writer keyring, so the
 * verified attestations are shared by all lanes of a holder. The attestation each admitted unit
 * came with is not kept here: it is stored with the unit in its arena segment (and in the spill
 * record or preserved-memory copy of it), so it lives exactly as long as the unit does.
 */

const authenticators = new WeakMap<WriterKeyring, UnitAuthenticator>();

/** Verdicts for the decoded units of one message (undefined where no keyring: units are not checked). */
export function authenticateUnits(
  keys: WriterKeyring | undefined,
  tokens: readonly string[],
  units: readonly InboundUnit[],
): (UnitAuthVerdict | undefined)[] | undefined {
  if (keys === undefined) return undefined;
  const decoded = units.filter((u) => u.unit !== undefined).map((u) => u.unit!);
  const verdicts = authenticatorFor(keys).check(tokens, decoded);
  let i = 0;
  return units.map((u) => (u.unit === undefined ? undefined : verdicts[i++]));
}

/** Verdicts for already decoded units (a custody transfer offer's); undefined where no keyring. */
export function authenticateDecoded(
  keys: WriterKeyring | undefined,
  tokens: readonly string[],
  units: readonly AttestedUnit[],
): UnitAuthVerdict[] | undefined {
  return keys === undefined ? undefined : authenticatorFor(keys).check(tokens, units);
}

function authenticatorFor(keys: WriterKeyring): UnitAuthenticator {
  let auth = authenticators.get(keys);
  if (auth === undefined) authenticators.set(keys, (auth = new UnitAuthenticator(keys)));
  return auth;
}
