import { z } from "zod";
import { CustodyError } from "../../core/index.ts";
import { defineMessage, decodeMessage } from "./wire/codec.ts";
import { bytes, identifier, uint } from "./wire/fields.ts";

/**
 * The wire kinds of measured routes: `route-probe` v1 on `custody.v1.probe.<toPeer>` (pings,
 * their answers, burst frames and the burst's acknowledgement) and `route-measurements` v1 on
 * `custody.v1.route.<fromPeer>` (what a prober measured on each of its edges, with the age of each
 * measurement). Bodies are strict: an unknown field is refused, not ignored.
 */

/** Largest burst frame a probe may carry (bytes of padding). */
export const PROBE_FRAME_MAX_BYTES = 64 * 1024;

/** What one probe message is. */
export const ProbePhase = { ping: "ping", pong: "pong", burst: "burst", burstAck: "burst-ack" } as const;
export type ProbePhase = (typeof ProbePhase)[keyof typeof ProbePhase];

const finiteNonNeg = z.number().finite().nonnegative();

/**
 * `route-probe` v1. `from` sent it to `to`; `nonce` ties answers to the prober's round (a ping's
 * pong echoes it; all frames of a burst share it, `index` counts them, `last` ends the burst).
 * `received` is in a burst-ack: the bytes of that burst the answerer got. `pad` fills burst frames.
 */
export const routeProbeSpec = defineMessage({
  kind: "route-probe",
  version: 1,
  schema: z.strictObject({
    from: identifier,
    to: identifier,
    phase: z.enum([ProbePhase.ping, ProbePhase.pong, ProbePhase.burst, ProbePhase.burstAck]),
    nonce: uint,
    index: uint,
    last: z.boolean(),
    received: uint,
    pad: bytes.refine((b) => b.byteLength <= PROBE_FRAME_MAX_BYTES, {
      message: `at most ${PROBE_FRAME_MAX_BYTES} bytes`,
    }),
  }),
  maxBytes: PROBE_FRAME_MAX_BYTES + 1024,
});
/** One decoded probe message. */
export type RouteProbe = z.infer<typeof routeProbeSpec.schema>;

/** At most this many edges per measurement message. */
export const ROUTES_MAX = 256;

const measuredRoute = z.strictObject({
  to: identifier,
  toSite: identifier,
  rttMs: finiteNonNeg,
  jitterMs: finiteNonNeg,
  /** Null when the probe budget allowed no burst on this edge. */
  throughputBytesPerSec: z.number().finite().positive().nullable(),
  /** Transport-unit bytes per second the prober sent on this edge over its last interval. */
  loadBytesPerSec: finiteNonNeg,
  samples: uint,
  /** Age of this measurement when the message was published (ms). */
  ageMs: finiteNonNeg,
});

/** `route-measurements` v1: a prober's newest measurement of each of its edges. */
export const routeMeasurementsSpec = defineMessage({
  kind: "route-measurements",
  version: 1,
  schema: z.strictObject({
    from: identifier,
    fromSite: identifier,
    routes: z.array(measuredRoute).max(ROUTES_MAX),
    /** Bytes of probes this prober sent in its last interval (never above its budget). */
    probeBytes: uint,
  }),
  maxBytes: 64 * 1024,
});
/** One decoded measurement message. */
export type RouteMeasurements = z.infer<typeof routeMeasurementsSpec.schema>;

/** Thrown when a measurement message names another sender than the subject it came on. */
export class RouteSenderMismatchError extends CustodyError {
  constructor(subjectPeer: string, bodyPeer: string) {
    super("route_sender_mismatch", `route measurements on ${subjectPeer}'s subject claim to come from ${bodyPeer}`, {
      subjectPeer,
      bodyPeer,
    });
  }
}

/**
 * Decodes a `route-measurements` message that arrived on `custody.v1.route.<subjectPeer>`: the
 * body must name the same sender (the server's permissions vouch only for the subject). Throws
 * WireError for a bad encoding and RouteSenderMismatchError for a mismatched sender.
 */
export function decodeRouteMeasurements(data: Uint8Array, subjectPeer: string): RouteMeasurements {
  const m = decodeMessage(routeMeasurementsSpec, data);
  if (m.from !== subjectPeer) throw new RouteSenderMismatchError(subjectPeer, m.from);
  return m;
}
