/**
 * A power cut takes a disk holder and its writer at once (sim seed 930138), on real processes and
 * a real nats-server: the holder (`custody run holder`) is SIGKILLed with a hole inside a spilled
 * segment — a unit lost on the wire that the writer had not re-sent yet — and the writer comes
 * back as a new process (`custody run writer`, new term, same state directory). The restarted
 * holder must receipt only what its spill holds, and the restarted writer must re-ship the hole
 * from its outbox until the holder's disk has it. No test code re-sends, repairs or admits anything:
 * the test only loses one message on the wire, kills, restarts and watches.
 */
import anyTest, { type TestFn } from "ava";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { claimIncarnation, startController, startVolumeWriter, UnitOutbox, type ControllerConfig } from "../../actors/index.ts";
import { nodeFileLayer } from "../../core/index.ts";
import { ControlLogFollower, ControlLogPeers, decodeReceiptBatch, generateHolderKeyPair, receiptBatchSpec } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { LossKind, type Site } from "../../policies/index.ts";
import { decodeMessage, receiptSubject, unitSubject } from "../../transport/protocol/index.ts";
import { initJetStreamControlLog, NatsTransport, readUnitMessage, senderOf, type PublishOptions } from "../../transport/index.ts";
import { TransportDecorator } from "../../transport/transport-decorator.ts";
import { SmartWalVolume } from "../../volume/index.ts";
import { DeployedProcess } from "../kit/deployed-process.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, eventually, site, systemClock, tempDir } from "./e2e-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const LANE = "l0";
const BLOCKS = 64;
const WRITES = 24;
/** The write whose unit is lost on the wire to h1 (units after it land in the same open segment). */
const LOST = 12;
const VOLUME = "vol-hole";
const REGION = "r-vol-hole";
const SITES: Record<string, Site> = {
  "s-w": site("s-w", "r1", "az1"),
  "s-1": site("s-1", "r1", "az1"),
  /** Holds the genesis base only (no holder process), in a region the power cut does not reach. */
  "s-v": site("s-v", "rv", "azv"),
};
/** Only h1's disk survives: the writer and h1 share region r1. */
const POWER = "power:r1";
/** Bounds that only end a hung run; they measure nothing. */
const READY_MS = 60_000;
const SETTLE_MS = 30_000;

/**
 * The writer's bus as the test sees it: the first unit message to h1 that carries `LOST` is lost
 * on the wire (NATS delivers at most once); everything else passes. Records what was lost.
 */
class LoseOneUnit extends TransportDecorator {
  lost = RangeSet.EMPTY;

  override publish(subject: string, data: Uint8Array, opts?: PublishOptions): void {
    if (this.lost.isEmpty && subject === unitSubject("h1", VOLUME, LANE)) {
      const headers = opts?.headers ?? {};
      const read = readUnitMessage({ data, headers }, senderOf(headers).sentThrough);
      const seqs = read.kind === "units" ? read.units.flatMap((u) => (u.unit ? [[u.unit.firstSeq, u.unit.lastSeq] as const] : [])) : [];
      if (seqs.some(([a, b]) => a <= LOST && LOST <= b)) {
        this.lost = seqs.reduce((s, [a, b]) => s.add(a, b), RangeSet.EMPTY);
        return;
      }
    }
    super.publish(subject, data, opts);
  }
}

test.serial("regression sim seed 930138: a disk holder restarted from a spilled segment with a hole receipts only what it holds, and the restarted writer process re-ships the hole until h1's disk has it", async (t) => {
  const url = t.context.nats.url;
  const dir = tempDir("custody-hole-");
  const processes: DeployedProcess[] = [];
  t.teardown(() => Promise.all(processes.map((p) => p.signal("SIGKILL", 10_000))));

  // h1: one disk holder, the writer's only first hop. Its open segment stays open for 5 s, so the
  // units after the lost one share the lost one's segment when it is sealed and spilled.
  const kp = generateHolderKeyPair();
  const keyFile = join(dir, "h1.key");
  writeFileSync(keyFile, kp.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const base = e2eHolderConfig("h1", SITES["s-1"]!, VOLUME, [{ lane: LANE, upstream: ["w1"] }]);
  const holder = { ...base, incarnation: undefined, residency: ["ram", "disk"], arena: { ...base.arena, maxOpenDelayMs: 5_000 }, flush: { intervalMs: 50, deadlineMs: 2_000 } };
  const holderFile = join(dir, "h1.json");
  writeFileSync(holderFile, JSON.stringify({ role: "holder", nats: { servers: url }, controlRegion: REGION, stateDir: join(dir, "h1"), keyFile, holder }));
  const startH1 = async () => {
    const p = DeployedProcess.role("h1", "holder", holderFile);
    processes.push(p);
    return { p, ready: (await p.ready(READY_MS)) as { incarnation: number } };
  };

  const ct = await NatsTransport.connect({ servers: url, name: "ctl-hole" });
  t.context.defer(() => ct.close());
  const { log: store } = await initJetStreamControlLog(ct.connection, { region: REGION });
  let h1 = await startH1();
  const config: ControllerConfig = {
    controllerId: "ctl",
    region: REGION,
    evalIntervalMs: 100,
    admission: "key-continuity",
    topology: {
      volume: VOLUME,
      lanes: [LANE],
      writerSite: "s-w",
      sites: Object.values(SITES),
      holderSites: { vault: "s-v", h1: "s-1" },
      bases: [{ id: "genesis", holder: "vault", cut: { [LANE]: 0 }, bytes: 0 }],
      keyAuthorities: [{ id: "ka", site: "s-v" }],
      links: [],
      recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
      scenarios: [{ name: POWER, losses: [{ domain: "region:r1", kind: LossKind.powerLoss }], deadlineSec: 3600, required: true }],
      timelines: [],
      staleAfterMs: 3_000,
      releasable: [],
    },
  };
  const controller = await startController(config, { transport: ct, clock: systemClock, store });
  t.context.defer(() => controller.stop());
  await controller.bootstrap([{ holderId: "h1", incarnation: 1, publicKey: kp.publicKey, failureDomain: `r1/az1/${SITES["s-1"]!.host}` }], ["h1"]);
  const h1Holdings = (incarnation: number, residency?: string) =>
    controller.holdings({ holderId: "h1" })
      .filter((h) => h.incarnation === incarnation && (residency === undefined || h.residency === residency))
      .reduce((a, h) => a.union(h.retained), RangeSet.EMPTY);
  const cut = () => {
    const r = controller.report()?.reports.find((x) => x.name === POWER);
    return r !== undefined && r.evidence === "observed" ? (r.cut?.[LANE] ?? -1) : -1;
  };

  // Every claim h1 makes, as it makes it (signed batches on the lane's receipt subject).
  const claims = new Map<number, RangeSet>();
  const watch = await NatsTransport.connect({ servers: url, name: "receipt-watch" });
  t.context.defer(() => watch.close());
  watch.subscribe(receiptSubject(VOLUME, LANE), (msg) => {
    const batch = decodeReceiptBatch(decodeMessage(receiptBatchSpec, msg.data).body);
    const inc = batch.holder.incarnation;
    for (const r of batch.receipts) claims.set(inc, (claims.get(inc) ?? RangeSet.EMPTY).union(r.retained));
  });

  // Writer term 1, laid out as `custody run writer` lays out its state directory, shipping over a
  // bus that loses one unit message. It would re-send the lost unit only after 10 minutes.
  const stateDir = join(dir, "w1");
  const dataKey = new Uint8Array(32).fill(5);
  const dataKeyFile = join(dir, "w1.datakey");
  writeFileSync(dataKeyFile, dataKey, { mode: 0o600 });
  const lanes = [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: ["h1"] }];
  const writerBase = { writerId: "w1", volume: VOLUME, lanes, contracts: [], holderSites: { h1: SITES["s-1"]! }, topologyEpoch: 1, policyGeneration: 1, maxUnitPayloadBytes: 4096 };
  await SmartWalVolume.create(join(stateDir, "volume"), { blockCount: BLOCKS, walCapacity: 4096 });
  const volume = await SmartWalVolume.open(join(stateDir, "volume"));
  const term = await claimIncarnation(nodeFileLayer, stateDir, { name: "term" });
  const { outbox } = await UnitOutbox.open(nodeFileLayer, join(stateDir, "outbox"), systemClock);
  const wt = await NatsTransport.connect({ servers: url, name: "w1-term1" });
  const bus = new LoseOneUnit(wt);
  const peers = new ControlLogPeers(new ControlLogFollower(store), systemClock, 500);
  await peers.refresh();
  const writer = startVolumeWriter({ ...writerBase, term, lanes: lanes.map((l) => ({ ...l, firstSeq: 1 })), resendAfterMs: 600_000 }, { transport: bus, clock: systemClock, volume, dataKey, peers, outbox });
  t.is(term, 1);
  // One unit per write, each acknowledged after a local sync (volume and outbox).
  for (let i = 0; i < WRITES; i++) {
    await writer.write(i % BLOCKS, blockData(100 + i));
    await writer.sync();
  }
  const hole = bus.lost;
  t.false(hole.isEmpty, "the unit message carrying the lost write was lost on the wire");
  t.true(hole.max! < WRITES, `units after the hole ${hole.toString()} reached h1`);
  const rest = RangeSet.of(1, WRITES).subtract(hole);
  await eventually(() => h1Holdings(1, "disk").coversAll(rest), `h1 persisted ${rest.toString()}`, SETTLE_MS);
  t.false(h1Holdings(1).intersects(hole), "h1#1 never held the hole");

  // The power cut: the writer's process goes (what it acknowledged is in its volume and outbox),
  // and h1 is SIGKILLed.
  writer.stop();
  await outbox.close();
  await volume.close();
  await wt.close();
  await h1.p.signal("SIGKILL", 10_000);

  // h1 comes back alone: nothing can send it the hole now, so whatever it claims comes from its spill.
  h1 = await startH1();
  t.is(h1.ready.incarnation, 2);
  await eventually(() => controller.controlState().holders.h1?.incarnation === 2, "the controller admitted h1#2", SETTLE_MS);
  await eventually(() => h1Holdings(2, "disk").coversAll(rest), "h1#2 receipts its spill at disk residency", SETTLE_MS);
  t.false((claims.get(2) ?? RangeSet.EMPTY).intersects(hole), `h1#2 claims ${claims.get(2)?.toString()}, never the hole ${hole.toString()} it does not hold`);
  t.false(h1Holdings(2).intersects(hole), "the ledger holds no claim of h1#2 on the hole");
  t.true(cut() < hole.min!, `the power cut's coverage stops below the hole (cut ${cut()})`);

  // The writer comes back as a process (term 2, same state directory) and ships its outbox again.
  const writerFile = join(dir, "w1.json");
  writeFileSync(writerFile, JSON.stringify({ role: "writer", nats: { servers: url }, controlRegion: REGION, stateDir, dataKeyFile, volume: { blockCount: BLOCKS }, writer: writerBase }));
  const w2 = DeployedProcess.role("w1", "writer", writerFile);
  processes.push(w2);
  t.like(await w2.ready(READY_MS), { term: 2 });
  await eventually(() => h1Holdings(2, "disk").covers(1, WRITES), `h1#2's disk holds 1-${WRITES} again`, SETTLE_MS, () => h1Holdings(2, "disk").toString());
  await eventually(() => cut() >= WRITES, `the power cut's coverage is back at the acknowledged head ${WRITES}`, SETTLE_MS, () => String(cut()));
});
