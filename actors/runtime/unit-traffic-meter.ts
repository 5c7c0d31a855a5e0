import type { PublishOptions } from "../../transport/index.ts";
import { TransportDecorator, unitDestination } from "../../transport/index.ts";

/**
 * A `Transport` decorator that counts the transport-unit bytes this process publishes to each
 * holder (its steady write load per edge, which a route measurement carries so repair can be
 * judged on what the link has left). Everything passes through unchanged (`inner` is public: link
 * shaping looks through the meter).
 */
export class UnitTrafficMeter extends TransportDecorator {
  private bytesTo = new Map<string, number>();

  /** Bytes of units published to each holder since the last call (the counts restart at zero). */
  take(): Map<string, number> {
    const out = this.bytesTo;
    this.bytesTo = new Map();
    return out;
  }

  override publish(subject: string, data: Uint8Array, opts?: PublishOptions): void {
    const to = unitDestination(subject);
    if (to !== undefined) this.bytesTo.set(to, (this.bytesTo.get(to) ?? 0) + data.byteLength);
    this.inner.publish(subject, data, opts);
  }
}
