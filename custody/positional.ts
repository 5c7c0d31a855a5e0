import { identifierProblem } from "../core/index.ts";

/**
 * Small, allocation-light validators for the canonical positional (msgpack array) forms. They
 * replace a schema library on the receipt hot path (tens of thousands of receipts per second).
 * Every one returns the typed value or throws PositionalError naming the dotted path.
 */
export class PositionalError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

/** `x` as an array of exactly `len` items. */
export function tupleOf(x: unknown, len: number, path: string): unknown[] {
  if (!Array.isArray(x) || x.length !== len) throw new PositionalError(path, `expected an array of ${len} items`);
  return x;
}

/** `x` as an array of at most `max` items. */
export function listOf(x: unknown, max: number, path: string): unknown[] {
  if (!Array.isArray(x)) throw new PositionalError(path, "expected an array");
  if (x.length > max) throw new PositionalError(path, `more than ${max} items`);
  return x;
}

/** `x` as a non-negative safe integer. */
export function uintAt(x: unknown, path: string): number {
  if (typeof x !== "number" || !Number.isSafeInteger(x) || x < 0)
    throw new PositionalError(path, "expected a non-negative safe integer");
  return x;
}

/** `x` as a safe integer >= min. */
export function intAt(x: unknown, min: number, path: string): number {
  if (typeof x !== "number" || !Number.isSafeInteger(x) || x < min)
    throw new PositionalError(path, `expected a safe integer >= ${min}`);
  return x;
}

/** `x` as a finite number within [min, max]. */
export function numberAt(x: unknown, min: number, max: number, path: string): number {
  if (typeof x !== "number" || !Number.isFinite(x) || x < min || x > max)
    throw new PositionalError(path, `expected a number in ${min}..${max}`);
  return x;
}

/** `x` as a subject-token identifier (see `core/identifier.ts`). */
export function tokenAt(x: unknown, path: string): string {
  const problem = identifierProblem(x);
  if (problem !== undefined) throw new PositionalError(path, `not a valid identifier: ${problem}`);
  return x as string;
}

/** `x` as a string of minLen..maxLen characters. */
export function stringAt(x: unknown, minLen: number, maxLen: number, path: string): string {
  if (typeof x !== "string" || x.length < minLen || x.length > maxLen)
    throw new PositionalError(path, `expected a string of ${minLen}..${maxLen} characters`);
  return x;
}

/** `x` as a boolean. */
export function boolAt(x: unknown, path: string): boolean {
  if (typeof x !== "boolean") throw new PositionalError(path, "expected a boolean");
  return x;
}

/** `x` as bytes (msgpack bin), optionally of an exact length. */
export function bytesAt(x: unknown, path: string, length?: number): Uint8Array {
  if (!(x instanceof Uint8Array)) throw new PositionalError(path, "expected bytes");
  if (length !== undefined && x.byteLength !== length)
    throw new PositionalError(path, `expected exactly ${length} bytes`);
  return x;
}

/** `x` as one of `values`. */
export function oneOfAt<T extends string>(x: unknown, values: readonly T[], path: string): T {
  if (typeof x !== "string" || !(values as readonly string[]).includes(x))
    throw new PositionalError(path, `expected one of ${values.join(", ")}`);
  return x as T;
}

/** `x` as canonical ranges: `[[first, last], ...]` sorted, disjoint and non-adjacent. */
export function rangesAt(x: unknown, max: number, path: string): [number, number][] {
  const list = listOf(x, max, path);
  let prevLast = -2;
  return list.map((r, i) => {
    const p = tupleOf(r, 2, `${path}.${i}`);
    const first = uintAt(p[0], `${path}.${i}.0`);
    const last = uintAt(p[1], `${path}.${i}.1`);
    if (last < first) throw new PositionalError(`${path}.${i}`, "last is below first");
    if (first <= prevLast + 1)
      throw new PositionalError(`${path}.${i}`, "ranges are not in canonical (sorted, merged) form");
    prevLast = last;
    return [first, last];
  });
}
