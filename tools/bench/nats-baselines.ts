import { connect, type NatsConnection } from "@nats-io/transport-node";
import { validateTransportUnit, type TransportUnit } from "../../lanes/index.ts";
import { encodeUnitRun, readUnitMessage } from "../../transport/index.ts";
import { DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_FRAME_UNITS } from "../../actors/index.ts";
import { encodedUnits } from "./encoded-units.ts";
import { CREDIT_WINDOW, VOLUME } from "./holder-chain.ts";

/**
 * bench:holder's baselines, each on its own two bare nats.js connections to the server at `url`:
 * raw publish → subscribe, and the least work any holder must do per unit. `timed` wraps the
 * measured part and returns the row's sample.
 */
export type Timed<S> = (body: () => Promise<void>) => Promise<S>;

/** Runs `use` with a publisher and a subscriber connection named after `row`, closing both after. */
async function withPubSub<T>(
  url: string,
  row: string,
  use: (pub: NatsConnection, sub: NatsConnection) => Promise<T>,
): Promise<T> {
  const pub = await connect({ servers: url, name: `${row}-pub` });
  const sub = await connect({ servers: url, name: `${row}-sub` });
  try {
    return await use(pub, sub);
  } finally {
    await pub.close();
    await sub.close();
  }
}

/** Raw NATS: bare nats.js publisher → subscriber of `count` messages of `size` bytes. */
export function raw<S>(url: string, size: number, count: number, timed: Timed<S>): Promise<S> {
  return withPubSub(url, `raw-${size}`, async (pub, sub) => {
    const data = new Uint8Array(size).fill(7);
    let got = 0;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const subject = `bench.raw.${size}`;
    const s = sub.subscribe(subject, {
      callback: () => {
        if (++got === count) done();
      },
    });
    await sub.flush();
    const perWindow = Math.max(1, Math.floor(CREDIT_WINDOW / 2 / size));
    const sample = await timed(async () => {
      for (let i = 0; i < count; i++) {
        pub.publish(subject, data);
        if ((i + 1) % perWindow === 0) await pub.flush();
      }
      await finished;
    });
    s.unsubscribe();
    return sample;
  });
}

/**
 * The least work of a holder: units framed as a credit sender frames them, then at the receiver
 * decoded, digest-verified and copied into a reused ring (retained memory), with bare nats.js.
 */
export function leastWork<S>(
  url: string,
  size: number,
  count: number,
  timed: Timed<S>,
): Promise<S & { unitsPerMessage: number }> {
  return withPubSub(url, `least-${size}`, async (pub, sub) => {
    const units = encodedUnits(VOLUME, `least${size}`, size, count);
    const ring = Buffer.allocUnsafe(64 << 20);
    let at = 0;
    let got = 0;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const subject = `bench.least.${size}`;
    const s = sub.subscribe(subject, {
      callback: (_err, m) => {
        const read = readUnitMessage({ data: m.data, headers: {} }, undefined);
        if (read.kind !== "units") throw new Error(`unexpected ${read.kind}`);
        for (const u of read.units) {
          const unit = validateTransportUnit(u.unit as TransportUnit);
          if (at + unit.payload.length > ring.length) at = 0;
          ring.set(unit.payload, at);
          at += unit.payload.length;
          if (++got === count) done();
        }
      },
    });
    await sub.flush();
    let messages = 0;
    const sample = await timed(async () => {
      let sinceFlush = 0;
      for (let i = 0; i < count;) {
        const data: Uint8Array[] = [];
        const figures: number[] = [];
        let bytes = 0;
        while (
          i < count &&
          (data.length === 0 || bytes + units.at(i).data.byteLength <= DEFAULT_MAX_FRAME_BYTES) &&
          data.length < DEFAULT_MAX_FRAME_UNITS
        ) {
          const u = units.at(i++);
          data.push(u.data);
          figures.push(i * u.bytes);
          bytes += u.data.byteLength;
        }
        pub.publish(subject, encodeUnitRun(data, figures, []));
        messages++;
        sinceFlush += bytes;
        if (sinceFlush >= CREDIT_WINDOW / 2) {
          sinceFlush = 0;
          await pub.flush();
        }
      }
      await finished;
    });
    s.unsubscribe();
    return { ...sample, unitsPerMessage: count / messages };
  });
}
