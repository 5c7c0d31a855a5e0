/**
 * Persistence targets on a real nats-server (JetStream control log), real spill files with
 * fdatasync: two disk-capable holders share a region whose power loss the contract must survive.
 * The controller names one of them in the control log; only that one writes to disk, the other
 * keeps the lane in RAM and says so in its counters, and the power-loss cut still reaches the
 * acknowledged head. When the operator declares the target failed, the controller names the other
 * one, which then persists what it holds — no test code flushes, chooses or repairs anything.
 */
import anyTest, { type TestFn } from "ava";
import { startController, type ControllerConfig } from "../../actors/index.ts";
import { ControlLogFollower, ControlLogPeers, failureDomainOf, persistenceChoiceOf, rawPublicKey } from "../../custody/index.ts";
import { LossKind, type Site } from "../../policies/index.ts";
import { initJetStreamControlLog, NatsTransport } from "../../transport/index.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { CountingFileLayer } from "../kit/counting-file-layer.ts";
import { custodyStdout } from "../kit/custody-cli.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, eventually, KeyRing, launchHolder, launchWriter, site, systemClock, tempDir } from "./e2e-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const VOLUME = "vol-targets";
const REGION = "r-vol-targets";
const LANE = "l0";
const BLOCKS = 64;
const SITES: Record<string, Site> = {
  "s-w": site("s-w", "r1", "az1"),
  "s-1": site("s-1", "r1", "az1"),
  "s-2": site("s-2", "r1", "az2"),
  /** Holds the genesis base only (no holder process), outside r1. */
  "s-v": site("s-v", "rv", "azv"),
};
/** Every holder is in r1: without a disk copy nothing survives it. */
const POWER = "r1 power loss";
/** d2's RAM survives this one: it needs no disk. */
const AZ1 = "az1 destroyed";
const SETTLE_MS = 30_000;

test.serial("the controller names one persistence target for a region's power loss; only it writes to disk, and after it is declared failed the other holder is named and persists", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const ct = await NatsTransport.connect({ servers: url, name: "ctl-targets" });
  t.context.defer(() => ct.close());
  const { log: store } = await initJetStreamControlLog(ct.connection, { region: REGION });

  // Two disk holders that follow the control log (as `custody run holder` does), both first hops.
  const files: Record<string, CountingFileLayer> = {};
  const holders = new Map<string, Awaited<ReturnType<typeof launchHolder>>>();
  const directories = new Map<string, ControlLogPeers>();
  for (const [id, s] of [["d1", "s-1"], ["d2", "s-2"]] as const) {
    files[id] = new CountingFileLayer();
    const cfg = e2eHolderConfig(id, SITES[s]!, VOLUME, [{ lane: LANE, upstream: ["w1"] }], { residency: ["ram", "disk"], flush: { intervalMs: 50, deadlineMs: 2_000 } });
    const peers = new ControlLogPeers(new ControlLogFollower(store), systemClock, 200);
    directories.set(id, peers);
    keys.add(id, 1);
    holders.set(id, await launchHolder(url, keys, cfg, { files: files[id], spillPath: `${tempDir()}/${id}.spill`, peers }));
  }
  t.context.defer(async () => {
    for (const h of holders.values()) await h.close();
  });

  const config: ControllerConfig = {
    controllerId: "ctl",
    region: REGION,
    evalIntervalMs: 50,
    persistenceTargets: { candidates: ["d1", "d2"] },
    topology: {
      volume: VOLUME,
      lanes: [LANE],
      writerSite: "s-w",
      sites: Object.values(SITES),
      holderSites: { vault: "s-v", d1: "s-1", d2: "s-2" },
      bases: [{ id: "genesis", holder: "vault", cut: { [LANE]: 0 }, bytes: 0 }],
      keyAuthorities: [{ id: "ka", site: "s-v" }],
      links: [],
      recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
      scenarios: [
        { name: POWER, losses: [{ domain: "region:r1", kind: LossKind.powerLoss }], deadlineSec: 3600, required: true },
        { name: AZ1, losses: [{ domain: "az:az1", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: true },
      ],
      timelines: [],
      staleAfterMs: 5_000,
      releasable: [],
    },
  };
  const controller = await startController(config, { transport: ct, clock: systemClock, store });
  t.context.defer(() => controller.stop());
  const ids = ["d1", "d2"];
  await controller.bootstrap(ids.map((id) => ({ holderId: id, incarnation: 1, publicKey: rawPublicKey(keys.key(id, 1)!), failureDomain: failureDomainOf(SITES[id === "d1" ? "s-1" : "s-2"]!) })), ids);
  const choice = () => persistenceChoiceOf(controller.controlState().persistence, VOLUME, LANE);
  await eventually(() => choice() !== undefined, "the controller chose the lane's persistence targets", SETTLE_MS, () => JSON.stringify([controller.counters.snapshot(), controller.evaluationState().sites, Object.values(controller.controlState().holders).map((h) => [h.holderId, h.status])]));
  t.like(choice(), { targets: ["d1"], fromSeq: 0, scenarios: [POWER] });
  // Each holder's view of the log catches up as its flush ticks ask (every 200 ms at most).
  for (const [id, peers] of directories) await eventually(() => persistenceChoiceOf(peers.state.persistence, VOLUME, LANE) !== undefined, `${id} follows the choice`, SETTLE_MS);

  const authority = new KeyAuthority("ka", "s-v");
  const writer = await launchWriter({ url, writerId: "w1", volume: VOLUME, blockCount: BLOCKS, lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: ids }], contracts: [], sites: { d1: SITES["s-1"]!, d2: SITES["s-2"]! }, keys, authority });
  t.context.defer(() => writer.close());
  const lane = (id: string) => holders.get(id)!.holder.lane(VOLUME, LANE)!;
  const powerCut = () => {
    const r = controller.report()?.reports.find((x) => x.name === POWER);
    return r?.cut?.[LANE] ?? -1;
  };
  let head = 0;
  for (let i = 0; i < 40; i++) head = await writer.write(i % BLOCKS, blockData(i));
  await writer.writer.sync();
  await eventually(() => lane("d1").diskResident.covers(1, head), `d1 persisted 1-${head}`, SETTLE_MS, () => lane("d1").diskResident.toString());
  await eventually(() => powerCut() >= head, "the power-loss cut reaches the acknowledged head through d1's disk", SETTLE_MS, () => String(powerCut()));
  await eventually(() => holders.get("d2")!.holder.counters.get("flush_skipped_not_target") > 0, "d2 passes over the lane's segments", SETTLE_MS);
  t.true(lane("d2").retained.covers(1, head), "d2 keeps its copy, in RAM");
  t.true(lane("d2").diskResident.isEmpty, "d2 persisted nothing");
  t.is(files["d2"]!.writes, 0, "d2 never wrote its spill stream");
  t.is(holders.get("d2")!.holder.counters.get("flush_synced"), 0);
  t.true(files["d1"]!.datasyncs > 0);

  // The operator declares d1 failed: its disk no longer counts, and d2 is named from the next sequence on.
  await custodyStdout(["holder", "fail", "--server", url, "--region", REGION, "--holder", "d1", "--json"]);
  await eventually(() => choice()?.targets.join() === "d2", "the controller named d2", SETTLE_MS, () => JSON.stringify(choice()));
  t.is(choice()!.fromSeq, head + 1, "the new targets apply from the next unacknowledged sequence; below it every disk holder may persist");
  for (let i = 40; i < 60; i++) head = await writer.write(i % BLOCKS, blockData(i));
  await writer.writer.sync();
  await eventually(() => lane("d2").diskResident.covers(1, head), `d2 persisted 1-${head}: what it held and what came after`, SETTLE_MS, () => lane("d2").diskResident.toString());
  await eventually(() => powerCut() >= head, "the power-loss cut reaches the head again, through d2's disk", SETTLE_MS, () => String(powerCut()));
  t.true(controller.counters.get("persistence_choice_committed") >= 2);
});
