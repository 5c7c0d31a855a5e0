/**
 * Regression (30-minute soak at 8f52bb3, found again at 3cda32b): a store's copy was released
 * before its first flush. Its receipts then claimed RAM only, two RAM holders had the same
 * sequences, so the controller took the store for one more RAM holder and released 1-24 there.
 * The store never had them again: every base build stopped short at sequence 1, no WAL was ever
 * released below a base, and the RAM holders kept 1-32 for good. A holder the topology names
 * durable is released only onto another disk copy or a base, from the first evaluation on.
 */
import anyTest, { type ExecutionContext, type TestFn } from "ava";
import { join } from "node:path";
import { BaseBuilder } from "../../actors/base-builder/base-builder.ts";
import { startController } from "../../actors/controller/controller.ts";
import { Counters } from "../../core/counters.ts";
import { fetchUnits } from "../../actors/repair/custody-reader.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { rawPublicKey } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { LossKind } from "../../policies/index.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, eventually, KeyRing, launchHolder, launchWriter, site, systemClock, tempDir } from "./e2e-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const VOLUME = "vol-dur";
const LANE = "l0";
const BLOCKS = 64;
const SITES = {
  "s-w": site("s-w", "r1", "az1"),
  "s-ram": site("s-ram", "r1", "az2"),
  "s-ram2": site("s-ram2", "r2", "az4"),
  "s-store": site("s-store", "r2", "az3"),
  "s-v": site("s-v", "r3", "az9"),
};
const HOLDERS = ["h-store", "h-ram", "h-ram2"] as const;
const WRITES = 40;

/** Runs a store that flushes only after `firstFlushMs`, beside two RAM holders, under a controller; returns what the store lost. */
async function storeLossBeforeFirstFlush(t: ExecutionContext<NatsTestContext>, durable: readonly string[] | undefined): Promise<{ lost: RangeSet; base: number | undefined; short: number; probeHeld: boolean }> {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka", "s-v");
  const dir = tempDir("custody-durable-");
  const ram = { residency: ["ram"] as ["ram"] };
  const store = await launchHolder(
    url,
    keys,
    e2eHolderConfig("h-store", SITES["s-store"], VOLUME, [{ lane: LANE, upstream: ["w1"] }], { residency: ["ram", "disk"], flush: { intervalMs: 4_000, deadlineMs: 8_000, rotateBytes: 1024 * 1024 } }),
    { files: nodeFileLayer, spillPath: join(dir, "store", "spill.log") },
  );
  t.teardown(() => store.close());
  const h1 = await launchHolder(url, keys, e2eHolderConfig("h-ram", SITES["s-ram"], VOLUME, [{ lane: LANE, upstream: ["w1"] }], ram));
  t.teardown(() => h1.close());
  const h2 = await launchHolder(url, keys, e2eHolderConfig("h-ram2", SITES["s-ram2"], VOLUME, [{ lane: LANE, upstream: ["w1"] }], ram));
  t.teardown(() => h2.close());

  const ct = await NatsTransport.connect({ servers: url, name: `ctl-dur-${durable === undefined ? "old" : "new"}` });
  t.teardown(() => ct.close());
  const { log } = await initJetStreamControlLog(ct.connection, { region: `r-dur-${durable === undefined ? "old" : "new"}` });
  const host = (h: keyof typeof SITES) => `host:${SITES[h].host}`;
  const controller = await startController(
    {
      controllerId: "ctl",
      region: "r-dur",
      evalIntervalMs: 50,
      releaseEveryMs: 100,
      topology: {
        volume: VOLUME,
        lanes: [LANE],
        writerSite: "s-w",
        sites: Object.values(SITES),
        holderSites: { "h-store": "s-store", "h-ram": "s-ram", "h-ram2": "s-ram2", vault: "s-v" },
        bases: [{ id: "genesis", holder: "vault", cut: { [LANE]: 0 }, bytes: 0 }],
        keyAuthorities: [{ id: "ka", site: "s-v" }],
        links: [],
        recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
        scenarios: [
          { name: "crash:h-ram", losses: [{ domain: host("s-ram"), kind: LossKind.crash }], deadlineSec: 3600, required: true },
          { name: "crash:h-store", losses: [{ domain: host("s-store"), kind: LossKind.crash }], deadlineSec: 3600, required: true },
          { name: "az1 lost", losses: [{ domain: "az:az1", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: true },
        ],
        timelines: [],
        staleAfterMs: 5_000,
        releasable: [...HOLDERS],
        ...(durable !== undefined ? { durable } : {}),
      },
    },
    { transport: ct, clock: systemClock, store: log },
  );
  t.teardown(() => controller.stop());
  await controller.bootstrap(
    HOLDERS.map((h) => ({ holderId: h, incarnation: 1, publicKey: rawPublicKey(keys.key(h, 1)!), failureDomain: h })),
    [...HOLDERS],
  );
  const sites = { "h-store": SITES["s-store"], "h-ram": SITES["s-ram"], "h-ram2": SITES["s-ram2"] };
  const rig = await launchWriter({ url, writerId: "w1", volume: VOLUME, blockCount: BLOCKS, lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: [...HOLDERS] }], contracts: [], sites, keys, authority });
  t.teardown(() => rig.close());

  for (let i = 0; i < WRITES; i++) await rig.write(i % BLOCKS, blockData(7000 + i));
  await rig.writer.sync();
  const storeLane = () => store.holder.lane(VOLUME, LANE)!;
  // Past the store's first flush: from here on it claims disk and is known durable either way.
  await eventually(() => storeLane().diskResident.covers(1, WRITES) || storeLane().released.overlaps(1, WRITES), "the store flushed or released 1..40", 20_000);
  // As many again, written once the store persists: they stay there either way.
  for (let i = WRITES; i < 2 * WRITES; i++) await rig.write(i % BLOCKS, blockData(7000 + i));
  await rig.writer.sync();
  // (Without the list a store that lost everything before its first flush is never seen durable,
  // and may lose these too: then nothing of them is left to wait for.)
  await eventually(
    () => storeLane().diskResident.covers(WRITES + 1, 2 * WRITES) || storeLane().released.overlaps(WRITES + 1, 2 * WRITES),
    "the store persisted or released 41..80",
    20_000,
  );
  const held = await fetchUnits(ct, "h-store", VOLUME, LANE, RangeSet.of(1, WRITES));
  let have = RangeSet.EMPTY;
  for (const u of held) have = have.union(RangeSet.of(u.firstSeq, u.lastSeq));
  // A base builder beside the store: it builds from sequence 1 or says why it cannot.
  authority.authorize(VOLUME, "base-builder");
  const counters = new Counters();
  const builder = new BaseBuilder({ holderId: "h-store", volume: VOLUME, lane: LANE, blockCount: BLOCKS, dir: join(dir, "bases"), minNewSeqs: 2 * WRITES }, ct, counters, authority.dataKey(VOLUME, "base-builder"));
  const holds80 = async () => (await fetchUnits(ct, "h-store", VOLUME, LANE, RangeSet.of(2 * WRITES, 2 * WRITES))).length > 0;
  const heldBefore = await holds80();
  const base = await builder.build();
  // Held before and after the build (a released sequence never comes back): so the build's probe found it.
  const probeHeld = heldBefore && (await holds80());
  const short = counters.get("base_build_short");
  return { lost: RangeSet.of(1, WRITES).subtract(have), base: base?.throughSeq, short, probeHeld };
}

test.serial("a store named durable keeps every sequence it received before its first flush, though two RAM holders have them", async (t) => {
  const { lost, base } = await storeLossBeforeFirstFlush(t, ["h-store"]);
  t.true(lost.isEmpty, `the store lost ${lost.toString()}`);
  t.is(base, 2 * WRITES, "a base is built from sequence 1");
});

test.serial("the setup is the hazard: with no holder named durable, the store's RAM-only copy is released before its first flush", async (t) => {
  // What the controller did before `topology.durable`: it learned durability only from a disk claim.
  const { lost, base, short, probeHeld } = await storeLossBeforeFirstFlush(t, undefined);
  t.false(lost.isEmpty, "the store kept everything: this setup no longer shows the hazard the test above guards against");
  t.log(`without durable: the store lost ${lost.toString()}`);
  t.is(base, undefined, "no base can start at sequence 1");
  // A build stops short when the store still has sequence 80 (the probe's); else it is not due yet.
  if (probeHeld) {
    t.is(short, 1, "the builder counts a build that stopped short (base_build_short)");
  }
});
