import { fastDecodeUnitFrame, writeUnitFrame } from "./protocol/index.ts";
import { fastDecodeUnit } from "./protocol/index.ts";
import { headerValue, type InboundMessage, type MessageHeaders } from "./transport.ts";
import {
  decodeAny,
  decodeMessage,
  encodeMessage,
  UNIT_MAX_BYTES,
  unitFrameSpec,
  unitSpec,
  WireError,
  WireErrorCode,
  type WireUnit,
  type WireUnitFrame,
} from "./protocol/index.ts";

/**
 * What travels on a unit subject (`custody.v1.unit.<toHolder>.<volume>.<lane>`), both ways:
 * senders pack the units they have ready at once into one `unit-frame` message (one unit alone
 * goes as a bare `unit` message), and receivers turn either form back into single units, each
 * with its own cumulative credit figure and trace headers. A frame is packaging only: every unit
 * in it is accounted, verified, stored, receipted and forwarded on its own.
 */

/** Header naming the sender of a unit message (credits are per sender). */
export const SENDER_HEADER = "Custody-Sender";
/** Header carrying the sender's cumulative credited bytes through the last unit of the message. */
export const SENT_THROUGH_HEADER = "Custody-Sent-Through";
/** Header carrying the sender's session (its incarnation or writer term): a restarted sender starts a new one. */
export const SESSION_HEADER = "Custody-Session";
/**
 * Header naming the credit window a message was sent under, `<holder incarnation>.<window>` (absent before any grant).
 */
export const CREDIT_WINDOW_HEADER = "Custody-Credit";

/**
 * Header naming the writer attestations of the message's units: their base64 tokens, comma
 * separated (custody/unit-attestation.ts). Absent where the deployment has no writer key.
 */
export const UNIT_ATTESTATION_HEADER = "Custody-Unit-Attestation";

/** The attestation tokens a unit message names (none when the header is absent). */
export function attestationTokens(headers: MessageHeaders): string[] {
  const v = headerValue(headers, UNIT_ATTESTATION_HEADER);
  return v === undefined || v === "" ? [] : v.split(",");
}

/** One unit ready to go out: its complete `unit` v1 encoding, cumulative credited bytes through it, its own headers. */
export interface OutboundUnit {
  readonly data: Uint8Array;
  readonly sentThrough: number;
  readonly headers?: MessageHeaders;
}

/**
 * The body of a message carrying `units` (in order): the bare unit encoding for one unit (sent as
 * is, no re-encoding), a `unit-frame` for several. Per-unit headers ride inside the frame only
 * when some unit has any (traced units), so an untraced frame stays lean.
 */
export function encodeUnitMessage(units: readonly OutboundUnit[]): Uint8Array {
  return encodeUnitRun(
    units.map((u) => u.data),
    units.map((u) => u.sentThrough),
    units.map((u) => u.headers),
  );
}

/** `encodeUnitMessage` over parallel arrays (the sender's hot path builds no object per unit). */
export function encodeUnitRun(
  data: readonly Uint8Array[],
  sentThrough: readonly number[],
  headers: readonly (MessageHeaders | undefined)[],
): Uint8Array {
  if (data.length === 1) return data[0]!;
  if (!headers.some(hasAny)) return writeUnitFrame(data, sentThrough);
  return encodeMessage(unitFrameSpec, {
    units: [...data],
    sentThrough: [...sentThrough],
    headers: headers.map((h) => ({ ...h })),
  });
}

/** One unit as a receiver meets it. Exactly one of `unit` and `error` is set. */
export interface InboundUnit {
  /** The complete `unit` v1 encoding: what a holder forwards, byte for byte. */
  readonly data: Uint8Array;
  /** The sender's cumulative credited bytes through this unit, when stated. */
  readonly sentThrough: number | undefined;
  /** This unit's own headers (trace context): the message's for a bare unit, the frame entry's otherwise. */
  readonly headers: MessageHeaders;
  readonly unit?: WireUnit;
  /** Why this unit did not decode (the rest of its frame is unaffected). */
  readonly error?: WireError;
}

/** A unit-subject message, read. */
export type UnitSubjectMessage =
  | { readonly kind: "units"; readonly units: readonly InboundUnit[] }
  | { readonly kind: "credit-request" }
  | { readonly kind: "other"; readonly name: string; readonly body: unknown };

const DIGITS = /^\d{1,15}$/;

const WINDOW = /^(\d{1,15})\.(\d{1,15})$/;

/** What a unit-subject message says about its sender and the credit it was sent under. */
export interface SenderHeaders {
  readonly sender: string | undefined;
  /** Cumulative credited bytes through the message (undefined when absent or malformed). */
  readonly sentThrough: number | undefined;
  /** The sender's session (undefined when absent or malformed). */
  readonly session: number | undefined;
  /** The credit window `{incarnation, window}` the message was sent under (undefined before any grant). */
  readonly window: { readonly incarnation: number; readonly window: number } | undefined;
}

/** The sender, its session, the credit window used and its stated cumulative bytes, from the message headers. */
export function senderOf(headers: MessageHeaders): SenderHeaders {
  const raw = headerValue(headers, SENT_THROUGH_HEADER);
  const ses = headerValue(headers, SESSION_HEADER);
  const win = WINDOW.exec(headerValue(headers, CREDIT_WINDOW_HEADER) ?? "");
  return {
    sender: headerValue(headers, SENDER_HEADER),
    sentThrough: raw !== undefined && DIGITS.test(raw) ? Number(raw) : undefined,
    session: ses !== undefined && DIGITS.test(ses) ? Number(ses) : undefined,
    window: win === null ? undefined : { incarnation: Number(win[1]), window: Number(win[2]) },
  };
}

/** The `Custody-Credit` header value of a window. */
export function creditWindowTag(incarnation: number, window: number): string {
  return `${incarnation}.${window}`;
}

/**
 * Reads a unit-subject message. Throws WireError when the message as a whole cannot be read (not
 * msgpack, unknown kind, a frame whose figures are inconsistent or disagree with its
 * Sent-Through header); the caller then accounts the header figure and refuses it. A unit inside
 * a frame that does not decode is returned with its `error`, so one bad unit never costs the
 * others their custody.
 */
export function readUnitMessage(
  msg: Pick<InboundMessage, "data" | "headers">,
  sentThrough: number | undefined,
): UnitSubjectMessage {
  // The common cases first: a bare unit or an untraced frame in our own encoders' layout.
  const small = msg.data.byteLength <= UNIT_MAX_BYTES;
  const bare = small ? fastDecodeUnit(msg.data) : undefined;
  if (bare !== undefined)
    return { kind: "units", units: [{ data: msg.data, sentThrough, headers: msg.headers, unit: bare }] };
  const frame = small ? fastDecodeUnitFrame(msg.data) : undefined;
  const decoded = frame !== undefined ? { kind: "unit-frame", body: frame } : decodeAny(msg.data);
  switch (decoded.kind) {
    case "unit":
      return {
        kind: "units",
        units: [{ data: msg.data, sentThrough, headers: msg.headers, unit: decoded.body as WireUnit }],
      };
    case "credit-request":
      return { kind: "credit-request" };
    case "unit-frame": {
      const f = decoded.body as WireUnitFrame; // decodeAny validated it against unitFrameSchema
      const last = f.sentThrough[f.sentThrough.length - 1]!;
      if (sentThrough !== undefined && sentThrough !== last) {
        throw new WireError(
          WireErrorCode.InvalidField,
          `unit-frame: Sent-Through header ${sentThrough} disagrees with the frame's last figure ${last}`,
          {
            kind: "unit-frame",
            field: "sentThrough",
          },
        );
      }
      const units: InboundUnit[] = [];
      for (let i = 0; i < f.units.length; i++) {
        const data = f.units[i]!;
        const headers = f.headers?.[i] ?? NO_HEADERS;
        try {
          units.push({ data, sentThrough: f.sentThrough[i], headers, unit: decodeMessage(unitSpec, data) });
        } catch (err) {
          if (!(err instanceof WireError)) throw err;
          units.push({ data, sentThrough: f.sentThrough[i], headers, error: err });
        }
      }
      return { kind: "units", units };
    }
    default:
      return { kind: "other", name: decoded.kind, body: decoded.body };
  }
}

const NO_HEADERS: MessageHeaders = Object.freeze({});

function hasAny(h: MessageHeaders | undefined): boolean {
  if (h !== undefined) for (const _ in h) return true;
  return false;
}
