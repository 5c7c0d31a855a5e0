/**
 * Link shaping, a test and demo facility (never for production traffic): a `Transport` decorator
 * that holds each transport unit back by the configured latency, jitter and serialization time of the edge from this
 * process's site to the
 * destination holder's site, so geography is visible on one laptop (a waypoint 6 ms away captures
 * bytes well before a region 40 ms away). Each shaped hop gets a `link.send` span, the parent of
 * the receiving holder's `admit` span, so a trace shows every hop with its latency.
 */
import { context as otelContext, ROOT_CONTEXT, SpanKind, trace, type Tracer } from "@opentelemetry/api";
import type { Clock } from "../core/index.ts";
import { CustodyError } from "../core/index.ts";
import { extractTraceContext, injectTraceContext } from "./trace-context.ts";
import type { PublishOptions, Transport } from "./transport.ts";
import { headerValue, type MessageHeaders } from "./transport.ts";
import { encodeUnitMessage, readUnitMessage } from "./unit-frames.ts";
import { decodeAny, parseSubject, type WireUnit } from "./protocol/index.ts";
import { TransportDecorator } from "./transport-decorator.ts";

/** Shape of one directed link. */
export interface LinkProfile {
  readonly latencyMs: number;
  readonly jitterMs: number;
  /** Serialization rate in bytes per millisecond (MB/s × 1000). */
  readonly bytesPerMs: number;
}

/** Thrown for a link profile with a negative delay or a non-positive rate. */
export class LinkProfileError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("invalid_link_profile", "a link needs latency >= 0, jitter >= 0 and a positive rate", detail);
  }
}

/**
 * One link's queue (pure; the caller supplies time and randomness). Units serialize one after
 * another at the link's rate, then fly for latency + jitter; delivery times never go backwards,
 * because NATS keeps per-publisher order and so must a shaped link.
 */
export class LinkQueue {
  private busyUntil = -Infinity;
  private lastDelivery = -Infinity;

  /** Throws LinkProfileError for an impossible profile. */
  constructor(readonly profile: LinkProfile) {
    if (!(profile.latencyMs >= 0) || !(profile.jitterMs >= 0) || !(profile.bytesPerMs > 0))
      throw new LinkProfileError({ ...profile });
  }

  /** Delivery time of `bytes` sent at `nowMs`, with `rand01` in [0,1) drawing the jitter. */
  schedule(nowMs: number, bytes: number, rand01: number): number {
    const start = Math.max(nowMs, this.busyUntil);
    this.busyUntil = start + bytes / this.profile.bytesPerMs;
    const at = Math.max(this.lastDelivery, this.busyUntil + this.profile.latencyMs + this.profile.jitterMs * rand01);
    this.lastDelivery = at;
    return at;
  }
}

/** Where a subject goes: the destination site and the shape of the link to it; undefined = not shaped. */
/** The holder a unit subject goes to; undefined for any other subject (routes shape units only). */
export function unitDestination(subject: string): string | undefined {
  try {
    const p = parseSubject(subject);
    return p.kind === "unit" ? p.toHolder : undefined;
  } catch {
    return undefined;
  }
}

export type LinkRoute = (
  subject: string,
) => { readonly toSite: string; readonly toHolder: string; readonly profile: LinkProfile } | undefined;

/** Options of `ShapedTransport`. */
export interface ShapedTransportOptions {
  readonly fromSite: string;
  readonly route: LinkRoute;
  readonly clock: Clock;
  /** Uniform [0,1) source for jitter (seeded in tests). */
  readonly random: () => number;
  /** When present, each shaped hop is a `link.send` span. */
  readonly tracer?: Tracer;
}

/**
 * Decorates `inner`: publishes whose route is known are delayed per link; everything else
 * (credits, receipts, requests) passes straight through. Subscriptions are the inner ones.
 */
export class ShapedTransport extends TransportDecorator {
  private readonly queues = new Map<string, LinkQueue>();
  private readonly pending = new Map<unknown, () => void>();
  private idle: (() => void)[] = [];
  /** Messages held back so far, and the total configured delay they got (ms). */
  readonly stats = { shaped: 0, delayMs: 0 };

  constructor(
    inner: Transport,
    private readonly opts: ShapedTransportOptions,
  ) {
    super(inner);
  }

  /** Messages held back right now (in flight on a shaped link). */
  get inFlight(): number {
    return this.pending.size;
  }

  override publish(subject: string, data: Uint8Array, opts?: PublishOptions): void {
    const route = this.opts.route(subject);
    if (route === undefined) return this.inner.publish(subject, data, opts);
    const key = `${this.opts.fromSite}>${route.toSite}`;
    let q = this.queues.get(key);
    if (q === undefined) this.queues.set(key, (q = new LinkQueue(route.profile)));
    const now = this.opts.clock.now();
    const at = q.schedule(now, data.byteLength, this.opts.random());
    const delay = Math.max(0, at - now);
    this.stats.shaped++;
    this.stats.delayMs += delay;
    let headers = opts?.headers;
    let end: () => void = () => undefined;
    const tracer = this.opts.tracer;
    if (tracer !== undefined) {
      const attributes = {
        "custody.from_site": this.opts.fromSite,
        "custody.to_site": route.toSite,
        "custody.to": route.toHolder,
        "custody.link_delay_ms": delay,
      };
      // One link.send span per unit, the child of the unit's own sender span (a holder's forward,
      // carried in its headers) or of the active one (a write); the unit then carries the link's context.
      const hop = (
        unitHeaders: MessageHeaders | undefined,
        bytes: number,
        unitAttrs: Record<string, string | number>,
      ) => {
        const parent =
          unitHeaders !== undefined && headerValue(unitHeaders, "traceparent") !== undefined
            ? extractTraceContext(unitHeaders, ROOT_CONTEXT)
            : otelContext.active();
        const span = tracer.startSpan(
          "link.send",
          { kind: SpanKind.PRODUCER, attributes: { ...attributes, "custody.bytes": bytes, ...unitAttrs } },
          parent,
        );
        const { traceparent: _drop, tracestate: _drop2, ...rest } = unitHeaders ?? {};
        return { span, headers: injectTraceContext({ ...rest }, trace.setSpan(ROOT_CONTEXT, span)) };
      };
      const frame = unitsOfFrame(data, headers);
      if (frame === undefined) {
        const h = hop(headers, data.byteLength, unitAttributes(data));
        headers = h.headers;
        end = () => h.span.end();
      } else {
        const hops = frame.map((u) => ({ ...u, ...hop(u.headers, u.data.byteLength, u.attributes) }));
        data = encodeUnitMessage(hops.map((u) => ({ data: u.data, sentThrough: u.sentThrough, headers: u.headers })));
        end = () => hops.forEach((h) => h.span.end());
      }
    }
    const fire = () => {
      this.pending.delete(id);
      try {
        this.inner.publish(subject, data, { ...opts, headers });
      } catch {
        // The connection closed while the unit was in flight: like a cut link, it is lost.
      }
      end();
      if (this.pending.size === 0) for (const r of this.idle.splice(0)) r();
    };
    const id = this.opts.clock.setTimeout(fire, delay);
    this.pending.set(id, fire);
  }

  /** Resolves once every held-back message was handed to the inner transport and flushed. */
  override async flush(): Promise<void> {
    if (this.pending.size > 0) await new Promise<void>((r) => this.idle.push(r));
    await this.inner.flush();
  }

  /** Delivers what is still held back (a clean shutdown drains its links), then closes the inner transport. */
  override async close(): Promise<void> {
    for (const [id, fire] of [...this.pending]) {
      this.opts.clock.clearTimeout(id);
      fire();
    }
    await this.inner.close();
  }
}

/** Volume and sequence range of an encoded unit, for span attributes; empty for anything else. */
function unitAttributes(data: Uint8Array): Record<string, string | number> {
  try {
    const m = decodeAny(data);
    return m.kind === "unit" ? attributesOf(m.body as WireUnit) : {};
  } catch {
    return {};
  }
}

function attributesOf(u: WireUnit): Record<string, string | number> {
  return {
    "custody.volume": u.volume,
    "custody.lane": u.lane,
    "custody.first_seq": u.firstSeq,
    "custody.last_seq": u.lastSeq,
  };
}

/** The units of a `unit-frame` message (each with its span attributes), or undefined for anything else. */
function unitsOfFrame(
  data: Uint8Array,
  headers: MessageHeaders | undefined,
):
  | { data: Uint8Array; sentThrough: number; headers: MessageHeaders; attributes: Record<string, string | number> }[]
  | undefined {
  let read;
  try {
    read = readUnitMessage({ data, headers: headers ?? {} }, undefined);
  } catch {
    return undefined;
  }
  if (read.kind !== "units" || read.units.length < 2) return undefined;
  return read.units.map((u) => ({
    data: u.data,
    sentThrough: u.sentThrough ?? 0,
    headers: u.headers,
    attributes: u.unit ? attributesOf(u.unit) : {},
  }));
}
