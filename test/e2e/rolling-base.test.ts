/**
 * Rolling bases on real NATS: a base builder beside a disk store turns the store's WAL into a base
 * snapshot; the store names it in its receipts; the controller then releases WAL the base covers —
 * the store's own included — and the store deletes spill files nothing in custody needs any more.
 * A recovery from the newest base plus the WAL that remains is byte-exact.
 */
import anyTest, { type TestFn } from "ava";
import { join } from "node:path";
import { BaseBuilder, BaseBuildTimeoutError } from "../../actors/base-builder/base-builder.ts";
import { startController } from "../../actors/controller/controller.ts";
import { fetchUnits } from "../../actors/repair/custody-reader.ts";
import { recoverVolume } from "../../actors/repair/volume-recovery.ts";
import { Counters } from "../../core/counters.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { rawPublicKey } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { LossKind } from "../../policies/index.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { TransportDecorator } from "../../transport/transport-decorator.ts";
import type { InboundMessage, RequestOptions } from "../../transport/transport.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, contentAt, e2eHolderConfig, eventually, KeyRing, launchHolder, launchWriter, readVolume, site, systemClock, tempDir } from "./e2e-fixture.ts";
import { readdirSync } from "node:fs";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const VOLUME = "vol-base";
const LANE = "l0";
const BLOCKS = 64;
const SITES = { "s-w": site("s-w", "r1", "az1"), "s-ram": site("s-ram", "r1", "az2"), "s-store": site("s-store", "r1", "az3"), "s-v": site("s-v", "r1", "az9") };

test.serial("a WAL store releases the WAL below a rolling base it built, gives the disk back, and base plus remaining WAL recover byte-exact", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka", "s-v");
  const dir = tempDir("custody-base-");
  const spillPath = join(dir, "store", "spill.log");
  const store = await launchHolder(url, keys, e2eHolderConfig("h-store", SITES["s-store"], VOLUME, [{ lane: LANE, upstream: ["w1"] }], { residency: ["ram", "disk"], flush: { intervalMs: 50, deadlineMs: 2_000, rotateBytes: 128 * 1024 } }), { files: nodeFileLayer, spillPath });
  t.teardown(() => store.close());
  const ram = await launchHolder(url, keys, e2eHolderConfig("h-ram", SITES["s-ram"], VOLUME, [{ lane: LANE, upstream: ["w1"] }]));
  t.teardown(() => ram.close());

  const ct = await NatsTransport.connect({ servers: url, name: "ctl-base" });
  t.teardown(() => ct.close());
  const { log } = await initJetStreamControlLog(ct.connection, { region: "r-base" });
  const controller = await startController(
    {
      controllerId: "ctl",
      region: "r-base",
      evalIntervalMs: 100,
      topology: {
        volume: VOLUME,
        lanes: [LANE],
        writerSite: "s-w",
        sites: Object.values(SITES),
        holderSites: { "h-store": "s-store", "h-ram": "s-ram", vault: "s-v" },
        bases: [{ id: "genesis", holder: "vault", cut: { [LANE]: 0 }, bytes: 0 }],
        keyAuthorities: [{ id: "ka", site: "s-v" }],
        links: [],
        recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
        scenarios: [
          { name: "crash:h-ram", losses: [{ domain: `host:${SITES["s-ram"].host}`, kind: LossKind.crash }], deadlineSec: 3600, required: true },
          { name: "crash:h-store", losses: [{ domain: `host:${SITES["s-store"].host}`, kind: LossKind.crash }], deadlineSec: 3600, required: true },
          { name: "az1 lost", losses: [{ domain: "az:az1", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: true },
        ],
        timelines: [],
        staleAfterMs: 5_000,
        releasable: ["h-store", "h-ram"],
      },
    },
    { transport: ct, clock: systemClock, store: log },
  );
  t.teardown(() => controller.stop());
  await controller.bootstrap(
    (["h-store", "h-ram"] as const).map((h) => ({ holderId: h, incarnation: 1, publicKey: rawPublicKey(keys.key(h, 1)!), failureDomain: h })),
    ["h-store", "h-ram"],
  );
  const rig = await launchWriter({ url, writerId: "w1", volume: VOLUME, blockCount: BLOCKS, lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: ["h-store", "h-ram"] }], contracts: [], sites: { "h-store": SITES["s-store"], "h-ram": SITES["s-ram"] }, keys, authority });
  t.teardown(() => rig.close());

  // The base builder beside the store, with the data key (the store never has it).
  const bt = await NatsTransport.connect({ servers: url, name: "base-builder" });
  t.teardown(() => bt.close());
  authority.authorize(VOLUME, "base-builder");
  // Its link can swallow requests for good: a reply that never comes, neither answer nor timeout.
  const link = new SwallowingTransport(bt);
  const builder = new BaseBuilder({ holderId: "h-store", volume: VOLUME, lane: LANE, blockCount: BLOCKS, dir: join(dir, "bases"), minNewSeqs: 50, maxSeqsPerBuild: 1000, buildTimeoutMs: 3_000 }, link, new Counters(), authority.dataKey(VOLUME, "base-builder"));

  for (let i = 0; i < 300; i++) await rig.write((i * 7) % BLOCKS, blockData(9000 + i));
  await rig.writer.sync();
  const storeLane = () => store.holder.lane(VOLUME, LANE)!;
  await eventually(() => storeLane().diskResident.covers(1, 300), "the store persisted 1-300", 20_000);
  const spillFiles = () => readdirSync(join(dir, "store")).filter((n) => n.startsWith("spill.log"));
  const filesBefore = spillFiles().length;
  t.true(filesBefore >= 3, `the spill stream rotated (${filesBefore} files)`);

  // Regression (30-minute soak at 8f52bb3): one build that never returned stopped every later build.
  link.swallowAfter = 1; // the probe is answered, the first WAL fetch never is
  const stuck = await t.throwsAsync(builder.build(), { instanceOf: BaseBuildTimeoutError });
  t.is(stuck?.detail["phase"], "fetch");
  t.deepEqual(readdirSync(join(dir, "bases")).filter((n) => n.startsWith("building")), [], "the abandoned build's files are gone");
  t.is(builder.progress().phase, "idle");
  link.swallowAfter = Infinity;

  const base = await builder.build();
  t.truthy(base);
  t.is(base!.throughSeq, 300);
  // The store names the base in its receipts; the controller releases what the base covers.
  await eventually(() => storeLane().released.covers(1, 250), "the store released WAL below its base", 20_000);
  await eventually(() => ram.holder.lane(VOLUME, LANE)!.released.covers(1, 250), "the RAM holder released it too", 20_000);
  await eventually(() => spillFiles().length < filesBefore, "spill files with nothing left in custody were deleted", 20_000);
  t.log(`spill files ${filesBefore} → ${spillFiles().length}; releases committed ${controller.counters.get("release_committed")}`);

  // More writes after the base; then recover from base + what the store still retains.
  for (let i = 300; i < 340; i++) await rig.write((i * 5) % BLOCKS, blockData(9000 + i));
  await rig.writer.sync();
  await eventually(() => storeLane().retained.covers(301, 340), "the store holds 301-340", 20_000);
  const units = await fetchUnits(bt, "h-store", VOLUME, LANE, RangeSet.of(base!.throughSeq + 1, 340));
  const out = join(tempDir("custody-base-recover-"), "vol");
  const result = await recoverVolume({ volume: VOLUME, dir: out, blockCount: BLOCKS, lanes: [LANE], dataKey: authority.dataKey(VOLUME, "base-builder"), units, base: { dir: base!.dir, cut: { [LANE]: base!.throughSeq } } });
  t.is(result.cut[LANE], 340);
  t.true(Buffer.from(await readVolume(out, BLOCKS)).equals(Buffer.from(contentAt(rig.writes, BLOCKS, result.lsn))), "base + remaining WAL is byte-exact");

  // The next base starts as a copy of this one's files and takes the WAL after it; alone it is
  // the volume as of its sequence, and the base it was copied from is unchanged.
  const firstBytes = Buffer.from(await readVolume(base!.dir, BLOCKS));
  for (let i = 340; i < 400; i++) await rig.write((i * 11) % BLOCKS, blockData(9000 + i));
  await rig.writer.sync();
  await eventually(() => storeLane().retained.covers(341, 400), "the store holds 341-400", 20_000);
  const next = await builder.build();
  t.is(next?.throughSeq, 400);
  t.true(Buffer.from(await readVolume(base!.dir, BLOCKS)).equals(firstBytes), "the previous base is untouched");
  const out2 = join(tempDir("custody-base-recover-"), "vol");
  const fromNext = await recoverVolume({ volume: VOLUME, dir: out2, blockCount: BLOCKS, lanes: [LANE], dataKey: authority.dataKey(VOLUME, "base-builder"), units: [], base: { dir: next!.dir, cut: { [LANE]: 400 } } });
  t.is(fromNext.cut[LANE], 400);
  // Nothing applied on top (no units): the volume is the base, as of the 400th write.
  const asOf400 = contentAt(rig.writes, BLOCKS, rig.writes[399]!.lsn);
  t.true(Buffer.from(await readVolume(out2, BLOCKS)).equals(Buffer.from(asOf400)), "the chained base is byte-exact");
});

/** Answers the first `swallowAfter` requests, then swallows the rest: their promises never settle. */
class SwallowingTransport extends TransportDecorator {
  swallowAfter = Infinity;
  override request(subject: string, data: Uint8Array, opts: RequestOptions): Promise<InboundMessage> {
    if (this.swallowAfter <= 0) return new Promise<InboundMessage>(() => undefined);
    this.swallowAfter--;
    return super.request(subject, data, opts);
  }
}
