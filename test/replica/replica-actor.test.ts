/**
 * The replica machine with its executors (startReplica), over a recording transport and a volume
 * whose writes and syncs the test controls: the order of writes, sync and position write, a failed
 * write, and what stopping does to callers still waiting.
 */
import test from "ava";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ReplicaStartError, startReplica } from "../../actors/replica/replica.ts";
import { CatchUpUnavailableError } from "../../actors/replica/catch-up-refusal.ts";
import { ReplicaRequestError } from "../../actors/replica/replica-executors.ts";
import { unitRecordBytes } from "../../arena/segment.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import type { InboundMessage, MessageHandler, Transport } from "../../transport/transport.ts";
import type { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { block, config, creditRequest, KEY, unitMessage, unitOf } from "./replica-step-fixture.ts";

/** A transport that hands subscribed messages to the test and never answers a request. */
function recordingTransport() {
  const handlers = new Map<string, MessageHandler>();
  const published: string[] = [];
  const t = {
    name: "fake",
    publish: (subject: string) => void published.push(subject),
    subscribe: (subject: string, h: MessageHandler) => {
      handlers.set(subject, h);
      return { subject, unsubscribe: () => void handlers.delete(subject), drain: async () => {} };
    },
    request: () => new Promise<InboundMessage>(() => {}),
    respond: () => {},
    flush: async () => {},
    close: async () => {},
  };
  const deliver = (e: ReturnType<typeof unitMessage>) => {
    if (e.type !== "nats.message") throw new Error("not a message");
    handlers.get("custody.v1.unit.r1.rv.l0")?.(e.msg);
  };
  return { transport: t as unknown as Transport, handlers, published, deliver };
}

/** A volume that logs writes and syncs; `hold` makes the next sync wait for `release`, `fail` fails the next write. */
function scriptedVolume() {
  const log: string[] = [];
  let held: (() => void) | undefined;
  const v = {
    hold: false,
    fail: false,
    release: () => held?.(),
    async write(lba: number) {
      if (v.fail) throw new Error("EIO on write");
      log.push(`write ${lba}`);
    },
    async syncCache() {
      if (v.hold) await new Promise<void>((res) => (held = res));
      log.push("sync");
      return 0;
    },
  };
  return { v, log, volume: v as unknown as SmartWalVolume };
}

async function start() {
  const dir = mkdtempSync(join(tmpdir(), "replica-actor-"));
  const net = recordingTransport();
  const vol = scriptedVolume();
  const ports = { transport: net.transport, volume: vol.volume, dataKey: KEY, files: nodeFileLayer, positionPath: join(dir, "pos") };
  const replica = await startReplica(config, ports);
  net.deliver(creditRequest({ session: 1 }));
  return { replica, net, vol, ports };
}

const WINDOW = { incarnation: 1, window: 1 };

test("units are written in order, then a barrier syncs and persists their LSN; a restart reads it back", async (t) => {
  const { replica, net, vol, ports } = await start();
  const u = unitOf(1, [
    { lsn: 4, lba: 2, data: block(1) },
    { lsn: 5, lba: 7, data: block(2) },
  ]);
  net.deliver(unitMessage(u, { session: 1, window: WINDOW, sentThrough: unitRecordBytes(u) }));
  t.is(await replica.barrier(), 5);
  t.deepEqual(vol.log, ["write 2", "write 7", "sync"]);
  t.is(replica.appliedLsn(), 5);
  t.is(replica.flushedLsn(), 5);
  t.true(net.published.includes("custody.v1.credit.r1.rv.l0"), "grants went out");
  replica.stop();
  const again = await startReplica(config, ports);
  t.is(again.flushedLsn(), 5, "the position survived the restart");
  t.is(again.appliedLsn(), 5);
  again.stop();
});

test("after a failed write nothing is reported durable: the barrier is refused and the flushed LSN stays", async (t) => {
  const { replica, net, vol } = await start();
  vol.v.fail = true;
  const u = unitOf(1, [{ lsn: 9, lba: 0, data: block(1) }]);
  net.deliver(unitMessage(u, { session: 1, window: WINDOW, sentThrough: unitRecordBytes(u) }));
  const err = await t.throwsAsync(replica.barrier(), { instanceOf: ReplicaRequestError });
  t.is(err?.code, "replica_volume_failed");
  t.is(replica.flushedLsn(), 0);
  t.is(replica.appliedLsn(), 0);
  t.is(replica.counters.get("replica_apply_failed"), 1);
  t.is(replica.counters.get("replica_barrier_failed"), 1);
  replica.stop();
});

test("stopping refuses a barrier still waiting and a running catch-up; afterwards both are refused at once", async (t) => {
  const { replica, vol } = await start();
  vol.v.hold = true;
  const waiting = replica.barrier();
  const catchingUp = replica.catchUp(); // the primary never answers
  const busy = await t.throwsAsync(replica.catchUp(), { instanceOf: CatchUpUnavailableError });
  t.is(busy?.code, "catchup_in_progress");
  replica.stop();
  t.is((await t.throwsAsync(waiting, { instanceOf: ReplicaRequestError }))?.code, "replica_stopped");
  t.is((await t.throwsAsync(catchingUp, { instanceOf: CatchUpUnavailableError }))?.code, "catchup_stopped");
  t.is((await t.throwsAsync(replica.barrier(), { instanceOf: ReplicaRequestError }))?.code, "replica_stopped");
  t.is((await t.throwsAsync(replica.catchUp(), { instanceOf: CatchUpUnavailableError }))?.code, "catchup_stopped");
  vol.v.release();
});

test("a replica that cannot start throws ReplicaStartError and leaves no subscription behind", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "replica-actor-"));
  const net = recordingTransport();
  const transport = { ...(net.transport as object), flush: async () => Promise.reject(new Error("closed")) };
  const ports = {
    transport: transport as unknown as Transport,
    volume: scriptedVolume().volume,
    dataKey: KEY,
    files: nodeFileLayer,
    positionPath: join(dir, "pos"),
  };
  const err = await t.throwsAsync(startReplica(config, ports), { instanceOf: ReplicaStartError });
  t.regex(err?.message ?? "", /failed to start: Error: closed/);
  t.is(net.handlers.size, 0);
});
