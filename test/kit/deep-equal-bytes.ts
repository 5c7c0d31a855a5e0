/**
 * `t.deepEqual` for plain data that carries large byte arrays (unit payloads, blocks).
 *
 * Why: AVA's comparison (concordance) lists every index of a typed array as a property name and
 * sorts them as strings before comparing, so one 64 KiB payload costs tens of milliseconds and a
 * property test over such values spends most of its time there. Node's `isDeepStrictEqual`
 * compares the bytes directly and is at least as strict for plain data (same prototypes, same own
 * keys, `Object.is` on primitives). When it finds the values equal the assertion passes; when it
 * does not, `t.deepEqual` decides and, if they differ, fails with AVA's usual diff.
 */
import { isDeepStrictEqual } from "node:util";
import type { ExecutionContext } from "ava";

/** Asserts `actual` deep-equals `expected` (plain objects, arrays, primitives, byte arrays; no Maps or Sets). */
export function deepEqualBytes(t: ExecutionContext, actual: unknown, expected: unknown, message?: string): void {
  if (isDeepStrictEqual(actual, expected)) t.pass(message);
  else t.deepEqual(actual, expected, message);
}
