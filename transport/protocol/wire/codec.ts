import { Decoder, Encoder } from "@msgpack/msgpack";
import type { z } from "zod";
import { isKnownFeature } from "./features.ts";
import { WireError, WireErrorCode } from "./wire-error.ts";
import { decodeBounded } from "./msgpack-bounds.ts";

export { WireError, WireErrorCode, isWireError } from "./wire-error.ts";

/**
 * One message kind at one version: its name, version, body schema (TypeScript type + runtime
 * validator) and the largest encoding a receiver accepts. Create with `defineMessage`.
 */
export interface MessageSpec<K extends string, T> {
  readonly kind: K;
  readonly version: number;
  readonly schema: z.ZodType<T>;
  /** Largest accepted encoding in bytes (envelope included); DEFAULT_MAX_BYTES when absent. */
  readonly maxBytes?: number;
  /**
   * Optional hand-written validator for kinds on the per-unit hot path. It returns the body with
   * exactly the schema's fields when the body is certainly valid, and undefined otherwise; then
   * the schema decides (and names the bad field). It must never accept what the schema refuses
   * (a property test holds every fast path to that).
   */
  readonly fastPath?: (body: unknown) => T | undefined;
  /**
   * Optional reader of whole encodings laid out exactly as `encodeMessage` writes them; returns
   * undefined for anything else (then the general decoder decides). Same rule as `fastPath`: it
   * never accepts what the general path refuses.
   */
  readonly fastDecode?: (bytes: Uint8Array) => T | undefined;
}

/** Size limit of kinds that declare none: the default NATS `max_payload` (1 MiB). */
export const DEFAULT_MAX_BYTES = 1024 * 1024;

// kind -> version -> spec. Module-level on purpose: one registry per process, like the feature set.
const registry = new Map<string, Map<number, MessageSpec<string, unknown>>>();
let largestMaxBytes = DEFAULT_MAX_BYTES;

const KIND_NAME = /^[a-z][a-z0-9-]{0,63}$/;

/**
 * Registers `spec` and returns it unchanged. Registering the same spec object twice is a no-op.
 * Throws WireError `invalid_spec` on a bad kind name (lowercase kebab-case, 1..64 chars), a
 * version that is not a positive integer, a bad maxBytes, or a different spec already registered
 * under the same kind and version.
 */
export function defineMessage<K extends string, T>(spec: MessageSpec<K, T>): MessageSpec<K, T> {
  if (!KIND_NAME.test(spec.kind)) {
    throw new WireError(
      WireErrorCode.InvalidSpec,
      `message kind ${JSON.stringify(spec.kind)} must be lowercase kebab-case, 1..64 chars`,
      { kind: spec.kind },
    );
  }
  if (!Number.isSafeInteger(spec.version) || spec.version < 1) {
    throw new WireError(WireErrorCode.InvalidSpec, `message ${spec.kind}: version must be a positive integer`, {
      kind: spec.kind,
      version: spec.version,
    });
  }
  if (spec.maxBytes !== undefined && (!Number.isSafeInteger(spec.maxBytes) || spec.maxBytes < 16)) {
    throw new WireError(WireErrorCode.InvalidSpec, `message ${spec.kind}: maxBytes must be an integer >= 16`, {
      kind: spec.kind,
      maxBytes: spec.maxBytes,
    });
  }
  let versions = registry.get(spec.kind);
  if (versions === undefined) {
    versions = new Map();
    registry.set(spec.kind, versions);
  }
  const existing = versions.get(spec.version);
  if (existing !== undefined && existing !== spec) {
    throw new WireError(WireErrorCode.InvalidSpec, `message ${spec.kind} v${spec.version} is already defined`, {
      kind: spec.kind,
      version: spec.version,
    });
  }
  versions.set(spec.version, spec as MessageSpec<string, unknown>);
  largestMaxBytes = Math.max(largestMaxBytes, limitOf(spec));
  return spec;
}

/** Every registered kind and version, sorted by kind then version. */
export function registeredKinds(): readonly { kind: string; version: number }[] {
  const out: { kind: string; version: number }[] = [];
  for (const [kind, versions] of registry) for (const version of versions.keys()) out.push({ kind, version });
  return out.sort((a, b) => (a.kind === b.kind ? a.version - b.version : a.kind < b.kind ? -1 : 1));
}

/** The registered spec for `kind` at `version`, if any (used by tooling that walks the registry). */
export function specFor(kind: string, version: number): MessageSpec<string, unknown> | undefined {
  return registry.get(kind)?.get(version);
}

// One encoder/decoder each: both are synchronous, and the encoder clones itself if re-entered.
const encoder = new Encoder({ ignoreUndefined: true });
const decoder = new Decoder({
  // Cheap guards against headers that claim huge containers in a few bytes.
  maxStrLength: 1024 * 1024,
  maxArrayLength: 1024 * 1024,
  maxMapLength: 64 * 1024,
  maxExtLength: 0,
});

/**
 * Validates `body` against the spec, wraps it in the envelope `{k, v, f?, b}` and encodes it.
 * Only the validated output is encoded, so undeclared fields never leave this process.
 * Throws WireError: `invalid_field` (body fails the schema), `unsupported_feature` (a required
 * feature this build does not implement: a sender must not claim what it cannot honour),
 * `too_large` (the encoding exceeds the kind's maxBytes).
 */
export function encodeMessage<K extends string, T>(
  spec: MessageSpec<K, T>,
  body: T,
  opts?: { requiredFeatures?: readonly string[] },
): Uint8Array {
  const features = opts?.requiredFeatures ?? [];
  features.forEach((name, i) => {
    if (!isKnownFeature(name)) {
      throw new WireError(
        WireErrorCode.UnsupportedFeature,
        `${spec.kind}: cannot require unknown feature ${JSON.stringify(name)}`,
        { kind: spec.kind, field: `f.${i}`, feature: name },
      );
    }
  });
  const valid = validateBody(spec, body);
  const envelope: Record<string, unknown> = { k: spec.kind, v: spec.version, b: valid };
  if (features.length > 0) envelope["f"] = [...features];
  const bytes = encoder.encode(envelope);
  const limit = limitOf(spec);
  if (bytes.byteLength > limit) {
    throw new WireError(
      WireErrorCode.TooLarge,
      `${spec.kind}: encoding of ${bytes.byteLength} bytes exceeds maxBytes ${limit}`,
      { kind: spec.kind, size: bytes.byteLength, maxBytes: limit },
    );
  }
  return bytes;
}

/**
 * Decodes bytes that must hold a message of exactly `spec`'s kind and version. Returns a fully
 * validated body (unknown body fields stripped) or throws a WireError; it never returns a partly
 * valid object and never throws anything else. Checks, in order: size (`too_large`, before any
 * parsing so an oversized frame costs nothing), msgpack and envelope shape (`malformed`), kind
 * (`wrong_kind`), version (`unsupported_version`), required features (`unsupported_feature`),
 * body (`invalid_field`, with the dotted path of the first bad field).
 * Byte fields of the result are views into `bytes` (no copy): the caller owns both.
 */
export function decodeMessage<K extends string, T>(spec: MessageSpec<K, T>, bytes: Uint8Array): T {
  checkSize(bytes, limitOf(spec), spec.kind);
  const fast = spec.fastDecode?.(bytes);
  if (fast !== undefined) return fast;
  const env = parseEnvelope(bytes);
  if (env.k !== spec.kind) {
    throw new WireError(WireErrorCode.WrongKind, `expected a ${spec.kind} message, got ${JSON.stringify(env.k)}`, {
      field: "k",
      expected: spec.kind,
      kind: env.k,
    });
  }
  if (env.v !== spec.version) {
    throw new WireError(
      WireErrorCode.UnsupportedVersion,
      `${spec.kind}: version ${env.v} is not supported (this decoder reads v${spec.version})`,
      { field: "v", kind: env.k, version: env.v, supported: [spec.version] },
    );
  }
  checkFeatures(env);
  return validateBody(spec, env.b);
}

/**
 * Decodes a message of any registered kind and version, dispatching on the envelope. Same checks
 * and guarantees as `decodeMessage`; an unregistered kind is `unknown_kind`. The size check runs
 * twice: against the largest registered limit before parsing, then against the kind's own limit.
 */
export function decodeAny(bytes: Uint8Array): { kind: string; version: number; body: unknown } {
  checkSize(bytes, largestMaxBytes, undefined);
  const env = parseEnvelope(bytes);
  const versions = registry.get(env.k);
  if (versions === undefined) {
    throw new WireError(WireErrorCode.UnknownKind, `unknown message kind ${JSON.stringify(env.k)}`, {
      field: "k",
      kind: env.k,
    });
  }
  const spec = versions.get(env.v);
  if (spec === undefined) {
    throw new WireError(WireErrorCode.UnsupportedVersion, `${env.k}: version ${env.v} is not supported`, {
      field: "v",
      kind: env.k,
      version: env.v,
      supported: [...versions.keys()].sort((a, b) => a - b),
    });
  }
  checkSize(bytes, limitOf(spec), spec.kind);
  checkFeatures(env);
  return { kind: env.k, version: env.v, body: validateBody(spec, env.b) };
}

interface Envelope {
  readonly k: string;
  readonly v: number;
  readonly f: readonly string[];
  readonly b: unknown;
}

function limitOf(spec: MessageSpec<string, unknown>): number {
  return spec.maxBytes ?? DEFAULT_MAX_BYTES;
}

function checkSize(bytes: Uint8Array, limit: number, kind: string | undefined): void {
  if (!(bytes instanceof Uint8Array)) {
    throw new WireError(WireErrorCode.Malformed, "wire message is not a byte array", { kind });
  }
  if (bytes.byteLength > limit) {
    throw new WireError(WireErrorCode.TooLarge, `message of ${bytes.byteLength} bytes exceeds maxBytes ${limit}`, {
      kind,
      size: bytes.byteLength,
      maxBytes: limit,
    });
  }
}

/** msgpack-decodes one envelope; any decoder failure, trailing byte or shape error is `malformed`. */
function parseEnvelope(bytes: Uint8Array): Envelope {
  let raw: unknown;
  try {
    raw = decodeBounded(decoder, bytes);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new WireError(
      WireErrorCode.Malformed,
      `not a msgpack message: ${reason}`,
      { size: bytes.byteLength },
      { cause: err },
    );
  }
  if (
    raw === null ||
    typeof raw !== "object" ||
    Array.isArray(raw) ||
    raw instanceof Uint8Array ||
    raw instanceof Date
  ) {
    throw new WireError(WireErrorCode.Malformed, "envelope is not a msgpack map", { field: "" });
  }
  const env = raw as Record<string, unknown>;
  const k = env["k"];
  if (typeof k !== "string" || k.length === 0) {
    throw new WireError(WireErrorCode.Malformed, "envelope kind (k) is missing or not a string", { field: "k" });
  }
  const v = env["v"];
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
    throw new WireError(WireErrorCode.Malformed, "envelope version (v) is missing or not a positive integer", {
      field: "v",
      kind: k,
    });
  }
  const f = env["f"];
  if (f !== undefined && (!Array.isArray(f) || !f.every((x) => typeof x === "string"))) {
    throw new WireError(WireErrorCode.Malformed, "envelope features (f) must be an array of strings", {
      field: "f",
      kind: k,
    });
  }
  if (!Object.hasOwn(env, "b")) {
    throw new WireError(WireErrorCode.Malformed, "envelope body (b) is missing", { field: "b", kind: k });
  }
  return { k, v, f: (f as string[] | undefined) ?? [], b: env["b"] };
}

function checkFeatures(env: Envelope): void {
  env.f.forEach((name, i) => {
    if (!isKnownFeature(name)) {
      throw new WireError(
        WireErrorCode.UnsupportedFeature,
        `${env.k}: required feature ${JSON.stringify(name)} is not supported by this build`,
        { field: `f.${i}`, kind: env.k, feature: name },
      );
    }
  });
}

function validateBody<T>(spec: MessageSpec<string, T>, body: unknown): T {
  const fast = spec.fastPath?.(body);
  if (fast !== undefined) return fast;
  const result = spec.schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue === undefined || issue.path.length === 0 ? "(body)" : issue.path.map(String).join(".");
  throw new WireError(WireErrorCode.InvalidField, `${spec.kind}: field ${field}: ${issue?.message ?? "invalid"}`, {
    field,
    kind: spec.kind,
    issue: issue?.code,
  });
}
