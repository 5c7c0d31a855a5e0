/**
 * The identifier rule: holder, volume, lane, region and role names all end up as NATS subject
 * tokens, so each must be one token. `.` separates tokens, `*` and `>` are wildcards; whitespace
 * and non-printable characters (Unicode category C: controls, format characters, lone surrogates,
 * private use, unassigned) would make a subject ambiguous, unprintable or not valid UTF-8 on the wire.
 */

/** Longest accepted identifier, in UTF-16 code units. */
export const MAX_IDENTIFIER_LENGTH = 128;

const FORBIDDEN = /[.*>\s\p{C}]/u;

/**
 * Identifiers found valid lately. Every unit names its volume and lane, so the same few strings
 * are checked over and over on the hot path; a valid string stays valid, so a hit skips the
 * Unicode-aware scan. Bounded: cleared when full (a flood of distinct names only costs scans).
 */
const recentlyValid = new Set<string>();
const RECENTLY_VALID_MAX = 4096;

/** Why `value` cannot be an identifier, or undefined when it can. Pure (a cache aside); never throws. */
export function identifierProblem(value: unknown): string | undefined {
  if (typeof value !== "string") return "not a string";
  if (recentlyValid.has(value)) return undefined;
  if (value.length === 0) return "empty";
  if (value.length > MAX_IDENTIFIER_LENGTH) return `longer than ${MAX_IDENTIFIER_LENGTH} characters`;
  const bad = FORBIDDEN.exec(value);
  if (bad !== null) return `contains forbidden character ${JSON.stringify(bad[0])} at ${bad.index}`;
  if (recentlyValid.size >= RECENTLY_VALID_MAX) recentlyValid.clear();
  recentlyValid.add(value);
  return undefined;
}

/** True when `value` is a valid identifier. */
export function isIdentifier(value: unknown): value is string {
  return identifierProblem(value) === undefined;
}
