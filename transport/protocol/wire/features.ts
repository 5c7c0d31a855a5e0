import { WireError, WireErrorCode } from "./wire-error.ts";

/**
 * Optional protocol features this build implements. A sender lists in the envelope (`f`) the
 * features a receiver MUST understand to read the message correctly; a receiver that does not
 * know one refuses the message (`unsupported_feature`) instead of silently reading it the old way
 * (an older peer must never downgrade evidence it does not understand).
 */
const known = new Map<string, string>();

const FEATURE_NAME = /^[a-z][a-z0-9-]{0,63}$/;

/**
 * Declares that this build implements feature `name`. Idempotent for the same name.
 * Throws WireError `invalid_spec` when the name is not lowercase kebab-case of 1..64 chars.
 */
export function defineFeature(name: string, description: string): string {
  if (!FEATURE_NAME.test(name)) {
    throw new WireError(
      WireErrorCode.InvalidSpec,
      `feature name ${JSON.stringify(name)} must be lowercase kebab-case, 1..64 chars`,
      { feature: name },
    );
  }
  if (!known.has(name)) known.set(name, description);
  return name;
}

/** True when this build implements feature `name`. */
export function isKnownFeature(name: string): boolean {
  return known.has(name);
}

/** The features this build implements, sorted by name. */
export function knownFeatures(): readonly { name: string; description: string }[] {
  return [...known.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, description]) => ({ name, description }));
}
