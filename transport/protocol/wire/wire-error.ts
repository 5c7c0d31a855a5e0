import { CustodyError } from "../../../core/index.ts";

/**
 * Why a wire message was refused. Values are stable: callers count and branch on them
 * (`counters.inc(err.code)`), never on message text.
 */
export const WireErrorCode = {
  /** Not msgpack, truncated, trailing bytes, or an envelope of the wrong shape. */
  Malformed: "malformed",
  /** More bytes than the kind's `maxBytes` (checked before any parsing). */
  TooLarge: "too_large",
  /** A well-formed envelope of another kind than the one the caller expects. */
  WrongKind: "wrong_kind",
  /** `decodeAny`: no kind of that name is registered in this build. */
  UnknownKind: "unknown_kind",
  /** The kind is known but not at this version. */
  UnsupportedVersion: "unsupported_version",
  /** The sender requires a feature this build does not implement. */
  UnsupportedFeature: "unsupported_feature",
  /** The body fails its schema; `field` is the dotted path of the first bad field. */
  InvalidField: "invalid_field",
  /** A programming error in `defineMessage`/`defineFeature` (bad name, duplicate registration). */
  InvalidSpec: "invalid_spec",
} as const;
export type WireErrorCode = (typeof WireErrorCode)[keyof typeof WireErrorCode];

/**
 * A refused wire message (or refused message definition). `code` says why, `field` names the
 * envelope key (`k`, `v`, `f.0`, `b`) or the dotted body path (`commitTs.3`) that was wrong,
 * when one can be named.
 */
export class WireError extends CustodyError {
  declare readonly code: WireErrorCode;
  readonly field?: string;

  constructor(
    code: WireErrorCode,
    message: string,
    detail: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, detail, options);
    const field = detail["field"];
    if (typeof field === "string") this.field = field;
  }
}

/** True when `err` is a WireError, optionally with the given code. */
export function isWireError(err: unknown, code?: WireErrorCode): err is WireError {
  return err instanceof WireError && (code === undefined || err.code === code);
}
