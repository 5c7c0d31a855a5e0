import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, StorageType, type PubAck } from "@nats-io/jetstream";

/** How many acked publishes a JetStream peer row keeps in flight (what an async publisher would pick). */
export const JETSTREAM_WINDOW = 64;
let streamCounter = 0;

/**
 * bench:holder's peer rows: what a user would pick instead of a holder hop — a JetStream R1 stream
 * (file or memory storage) and acked publishes of `count` payloads of `size` bytes with at most
 * `JETSTREAM_WINDOW` unacknowledged. `timed` wraps the publishing only; the stream is created
 * before and deleted after, so each row starts empty like a fresh holder lane.
 */
export async function jetstreamAckedPublish(
  url: string,
  storage: "file" | "memory",
  size: number,
  count: number,
  timed: (body: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const nc = await connect({ servers: url, name: `js-${storage}-${size}` });
  try {
    const jsm = await jetstreamManager(nc);
    const name = `BENCH_${storage.toUpperCase()}_${size}_${++streamCounter}`;
    const subject = `bench.js.${name}`;
    await jsm.streams.add({
      name,
      subjects: [subject],
      storage: storage === "file" ? StorageType.File : StorageType.Memory,
      num_replicas: 1,
    });
    const js = jetstream(nc);
    const data = new Uint8Array(size).fill(7);
    await timed(async () => {
      const inflight: Promise<PubAck>[] = [];
      for (let i = 0; i < count; i++) {
        inflight.push(js.publish(subject, data));
        if (inflight.length >= JETSTREAM_WINDOW) await inflight.shift();
      }
      await Promise.all(inflight);
    });
    await jsm.streams.delete(name);
  } finally {
    await nc.close();
  }
}
