/**
 * Raw and coalesced streams of one volume on real NATS (issue #22 item 1). The writer sends its
 * raw lane to `h-raw` and, through its coalescing consumer, a derived lane (newest block versions
 * per window) to `h-img` in another region. `h-img` receipts coalesced cuts; where only it
 * survives, the controller reports stream `coalesced` at a window end, and the image fetched from
 * `h-img` rebuilds exactly the raw log's content through that cut.
 */
import anyTest, { type ExecutionContext, type TestFn } from "ava";
import { startController } from "../../actors/controller/controller.ts";
import { fetchUnits } from "../../actors/repair/custody-reader.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { rawPublicKey } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { LossKind } from "../../policies/index.ts";
import { openCoalescedPayload, openPayload } from "../../transport/protocol/wire/unit-payload.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { custodyCli } from "../kit/custody-cli.ts";
import { blockData, e2eHolderConfig, eventually, KeyRing, launchHolder, launchWriter, site, systemClock } from "./e2e-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const VOLUME = "vol-co";
const LANE = "l0";
const DERIVED = "l0-coalesced";
const BLOCKS = 64;
const WRITES = 2000;
const WINDOW = 250;
const SITES = {
  "s-w": site("s-w", "r1", "az1"),
  "s-raw": site("s-raw", "r1", "az2"),
  "s-img": site("s-img", "r2", "az3"),
  "s-v": site("s-v", "r3", "az9"),
};
const RAW_SIDE_LOST = "writer's region lost (raw holder with it)";
const IMAGE_LOST = "image holder's region lost";

/** The volume's controller on its own connection and control log (region `r-<volume>`): lanes, derived lanes, both loss scenarios. */
async function coController(t: ExecutionContext<NatsTestContext>, url: string, volume: string, lanes: string[], coalesced: Record<string, string>) {
  const ct = await NatsTransport.connect({ servers: url, name: `ctl-${volume}` });
  t.teardown(() => ct.close());
  const region = `r-${volume}`;
  const { log } = await initJetStreamControlLog(ct.connection, { region });
  const controller = await startController(
    {
      controllerId: "ctl",
      region,
      evalIntervalMs: 100,
      topology: {
        volume,
        lanes,
        coalesced,
        writerSite: "s-w",
        sites: Object.values(SITES),
        holderSites: { "h-raw": "s-raw", "h-img": "s-img", vault: "s-v" },
        bases: [{ id: "genesis", holder: "vault", cut: Object.fromEntries(lanes.map((l) => [l, 0])), bytes: 0 }],
        keyAuthorities: [{ id: "ka", site: "s-v" }],
        links: [],
        recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
        scenarios: [
          { name: RAW_SIDE_LOST, losses: [{ domain: "region:r1", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: false },
          { name: IMAGE_LOST, losses: [{ domain: "region:r2", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: false },
        ],
        timelines: [],
        staleAfterMs: 60_000,
        releasable: [],
      },
    },
    { transport: ct, clock: systemClock, store: log },
  );
  t.teardown(() => controller.stop());
  return controller;
}

test.serial("an overwrite-heavy workload: the coalesced holder receipts coalesced cuts, a scenario where only it survives reports stream coalesced at a window end, and its image rebuilds the raw log through that cut", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka", "s-v");
  const arena = { segmentBytes: 2 << 20, limitBytes: 32 << 20, maxOutstandingCredit: 2 << 20, maxUnitBytes: 512 << 10 };
  const hRaw = await launchHolder(url, keys, e2eHolderConfig("h-raw", SITES["s-raw"], VOLUME, [{ lane: LANE, upstream: ["w1"] }], { arena }));
  t.teardown(() => hRaw.close());
  const hImg = await launchHolder(url, keys, e2eHolderConfig("h-img", SITES["s-img"], VOLUME, [{ lane: DERIVED, upstream: ["w1"], representation: "coalesced" }], { arena }));
  t.teardown(() => hImg.close());

  const controller = await coController(t, url, VOLUME, [LANE], { [DERIVED]: LANE });
  const ids = ["h-raw", "h-img"];
  await controller.bootstrap(ids.map((h) => ({ holderId: h, incarnation: 1, publicKey: rawPublicKey(keys.key(h, 1)!), failureDomain: h })), ["h-raw"]);
  const rig = await launchWriter({
    url,
    writerId: "w1",
    volume: VOLUME,
    blockCount: BLOCKS,
    lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: ["h-raw"] }],
    contracts: [],
    sites: { "h-raw": SITES["s-raw"], "h-img": SITES["s-img"] },
    keys,
    authority,
    coalesced: { holders: ["h-img"], windowRecords: WINDOW, windowMs: 5000 },
  });
  t.teardown(() => rig.close());

  // Overwrite-heavy: 2,000 one-block writes over 64 blocks (a fixed pseudo-random sequence).
  let x = 12345;
  for (let i = 0; i < WRITES; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    await rig.write((x >>> 16) % BLOCKS, blockData(i + 1));
  }
  await rig.writer.sync();
  t.is(rig.writer.heads()[LANE], WRITES);

  // The image holder holds every window and receipts it as coalesced, through a window end.
  await eventually(() => hImg.holder.lane(VOLUME, DERIVED)?.retained.covers(1, WRITES) === true, "h-img holds every window", 20_000, () => JSON.stringify({ held: hImg.holder.lane(VOLUME, DERIVED)?.retained.toString(), writer: rig.writer.counters.snapshot(), holder: hImg.holder.counters.snapshot() }));
  await eventually(() => controller.holdings({ volume: VOLUME }).some((h) => h.lane === DERIVED && h.retained.covers(1, WRITES)), "the controller has h-img's receipts", 20_000);
  // The writer keeps a derived window only until its holders receipt it (no status confirms a
  // derived lane: waiting for one would keep every window for good).
  await eventually(() => rig.writer.retainedSeqs(DERIVED).isEmpty, "the writer forgets receipted windows", 20_000, () => rig.writer.retainedSeqs(DERIVED).toString());
  const images = controller.holdings({ volume: VOLUME }).filter((h) => h.lane === DERIVED);
  t.true(images.length > 0);
  const windowEnds = new Set(rig.units.filter((u) => u.lane === DERIVED).map((u) => u.lastSeq));
  for (const h of images) {
    t.is(h.holderId, "h-img");
    t.is(h.representation, "coalesced");
    const p = h.receipt.payload;
    t.true(p.representation === "coalesced" && windowEnds.has(p.sourceCutSeq), "the source cut is a window end");
  }
  t.deepEqual(controller.holdings({ volume: VOLUME, lane: LANE }).map((h) => h.holderId).sort(), ["h-raw"], "no coalesced holding on the raw lane");

  // Only the image survives the writer's region: stream coalesced, cut at a window end.
  const scenario = (name: string) => controller.status()?.scenarios.find((s) => s.name === name);
  await eventually(() => scenario(RAW_SIDE_LOST)?.cut?.[0]?.[1] === WRITES, "the controller reports the newest window end", 20_000, () => JSON.stringify(scenario(RAW_SIDE_LOST)));
  const lost = scenario(RAW_SIDE_LOST)!;
  t.is(lost.stream, "coalesced");
  const cut = lost.cut![0]![1];
  t.true(windowEnds.has(cut));
  t.deepEqual(lost.contributors, ["h-img", "vault"]);
  // Where the raw holder survives, the raw stream gives the cut (a document without `stream` is raw).
  t.is(scenario(IMAGE_LOST)?.stream ?? "raw", "raw");
  // `custody status` prints the stream of each scenario's cut.
  const table = (await custodyCli(["status", VOLUME, "--server", url])).stdout.split("\n");
  t.regex(table.find((l) => l.startsWith("scenario"))!, /\sstream\s/);
  t.regex(table.find((l) => l.startsWith(RAW_SIDE_LOST))!, new RegExp(`\\s${LANE}:${cut}\\s.*\\sobserved\\s+coalesced\\s`));
  t.regex(table.find((l) => l.startsWith(IMAGE_LOST))!, /\sobserved\s+raw\s/);

  // Recovery from the image alone equals the raw log applied through the cut.
  const reader = await NatsTransport.connect({ servers: url, name: "reader-co" });
  t.teardown(() => reader.close());
  const key = authority.dataKey(VOLUME, "w1");
  const derived = await fetchUnits(reader, "h-img", VOLUME, DERIVED, RangeSet.of(1, cut));
  const image = new Uint8Array(BLOCKS * BLOCK_SIZE);
  for (const u of derived.sort((a, b) => a.firstSeq - b.firstSeq)) for (const r of openCoalescedPayload(key, u, u.payload)) image.set(r.data, r.lba * BLOCK_SIZE);
  const rawLog = new Uint8Array(BLOCKS * BLOCK_SIZE);
  const rawUnits = rig.units.filter((u) => u.lane === LANE).sort((a, b) => a.firstSeq - b.firstSeq);
  for (const u of rawUnits) for (const r of openPayload(key, u, u.payload)) if (r.seq <= cut) rawLog.set(r.data, r.lba * BLOCK_SIZE);
  t.true(Buffer.from(image).equals(Buffer.from(rawLog)), "the coalesced image equals the raw log through the cut");

  // A base through the cut on h-img's own disk (as a base builder's receipts would announce it): it
  // outlives the image wherever the image survives, so the windows it contains are released there.
  controller.addBase({ id: "h-img-snap-1", holder: "h-img", cut: { [LANE]: cut }, bytes: 0 });
  await eventually(() => hImg.holder.lane(VOLUME, DERIVED)!.released.covers(1, cut), `h-img released the windows through ${cut}`, 20_000, () => JSON.stringify({ released: hImg.holder.lane(VOLUME, DERIVED)!.released.toString(), counters: controller.counters.snapshot() }));
  t.true(controller.counters.get("image_release_committed") >= 1);
  t.false(hImg.holder.lane(VOLUME, DERIVED)!.retained.intersects(RangeSet.of(1, cut)), "and no longer keeps them");

  // The figure: derived bytes ÷ raw bytes on this workload (block bytes, and whole unit payloads).
  const c = rig.writer.counters;
  const blockRatio = c.get("coalesce_derived_bytes") / c.get("coalesce_raw_bytes");
  const payload = (lane: string) => rig.units.filter((u) => u.lane === lane).reduce((s, u) => s + u.payload.length + 8 * u.commitTs.length, 0);
  const payloadRatio = payload(DERIVED) / payload(LANE);
  t.log(`coalesced/raw: block bytes ${c.get("coalesce_derived_bytes")}/${c.get("coalesce_raw_bytes")} = ${blockRatio.toFixed(3)}; unit payload+timestamps ${payload(DERIVED)}/${payload(LANE)} = ${payloadRatio.toFixed(3)}; windows ${c.get("coalesce_windows")}, records dropped ${c.get("coalesce_dropped_records")}`);
  t.is(c.get("coalesce_raw_bytes"), WRITES * BLOCK_SIZE);
  t.true(c.get("coalesce_derived_bytes") <= c.get("coalesce_windows") * BLOCKS * BLOCK_SIZE, "a window never keeps more than one version of each of the 64 blocks");
  t.is(c.get("coalesce_dropped_records"), WRITES - rig.units.filter((u) => u.lane === DERIVED).reduce((n, u) => n + openCoalescedPayload(key, u, u.payload).length, 0));
});

test.serial("a volume of two lanes: the coalesced stream ships its manifests, and where only the images survive the cut spans both lanes at one of them, a consistent prefix of the volume's writes", async (t) => {
  const url = t.context.nats.url;
  const volume = "vol-co2";
  const [L0, L1] = ["l0", "l1"];
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka", "s-v");
  const arena = { segmentBytes: 2 << 20, limitBytes: 32 << 20, maxOutstandingCredit: 2 << 20, maxUnitBytes: 512 << 10 };
  const hRaw = await launchHolder(url, keys, e2eHolderConfig("h-raw", SITES["s-raw"], volume, [{ lane: L0, upstream: ["w2"] }, { lane: L1, upstream: ["w2"] }], { arena }));
  t.teardown(() => hRaw.close());
  const derived = [`${L0}-coalesced`, `${L1}-coalesced`];
  const hImg = await launchHolder(url, keys, e2eHolderConfig("h-img", SITES["s-img"], volume, derived.map((lane) => ({ lane, upstream: ["w2"], representation: "coalesced" as const })), { arena }));
  t.teardown(() => hImg.close());
  const controller = await coController(t, url, volume, [L0, L1], { [derived[0]!]: L0, [derived[1]!]: L1 });
  await controller.bootstrap(["h-raw", "h-img"].map((h) => ({ holderId: h, incarnation: 1, publicKey: rawPublicKey(keys.key(h, 1)!), failureDomain: h })), ["h-raw"]);
  const half = BLOCKS / 2;
  const rig = await launchWriter({
    url,
    writerId: "w2",
    volume,
    blockCount: BLOCKS,
    lanes: [
      { lane: L0, fromLba: 0, toLba: half - 1, holders: ["h-raw"] },
      { lane: L1, fromLba: half, toLba: BLOCKS - 1, holders: ["h-raw"] },
    ],
    contracts: [],
    sites: { "h-raw": SITES["s-raw"], "h-img": SITES["s-img"] },
    keys,
    authority,
    coalesced: { holders: ["h-img"], windowRecords: 97, windowMs: 5000 },
  });
  t.teardown(() => rig.close());

  // Overwrite-heavy over both lanes; every 7th write is two blocks across the lane boundary (one LSN, a record in each lane).
  let x = 777;
  for (let i = 0; i < 1200; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const across = i % 7 === 0;
    const lba = across ? half - 1 : (x >>> 16) % BLOCKS;
    const data = new Uint8Array((across ? 2 : 1) * BLOCK_SIZE);
    data.set(blockData(i + 1));
    if (across) data.set(blockData(i + 100_000), BLOCK_SIZE);
    await rig.write(lba, data);
  }
  await rig.writer.sync();
  const heads = rig.writer.heads();
  t.true(rig.writer.counters.get("coalesced_manifest_shipped") >= 1, "the coalesced stream shipped manifests");

  // Only the images survive the writer's region: a coalesced cut across both lanes, at a manifest.
  const scenario = () => controller.status()?.scenarios.find((s) => s.name === RAW_SIDE_LOST);
  const cutOf = () => Object.fromEntries(scenario()?.cut ?? []) as Record<string, number>;
  await eventually(() => (cutOf()[L0] ?? 0) > 0 && (cutOf()[L1] ?? 0) > 0 && scenario()?.stream === "coalesced", "a coalesced cut across both lanes", 30_000, () => JSON.stringify({ s: scenario(), img: hImg.holder.counters.snapshot() }));
  const cut = cutOf();
  t.true(cut[L0]! <= heads[L0]! && cut[L1]! <= heads[L1]!);
  t.true(hImg.holder.counters.get("manifest_kept") >= 1, "the image holder kept the stream's manifests");

  // The cut is a prefix of the volume's writes: every record it includes (either lane) has a lower LSN than every record it leaves out.
  const key = authority.dataKey(volume, "w2");
  const rawRecords = rig.units.filter((u) => u.lane === L0 || u.lane === L1).flatMap((u) => openPayload(key, u, u.payload).map((r) => ({ ...r, lane: u.lane })));
  const inCut = (r: { lane: string; seq: number }) => r.seq <= cut[r.lane]!;
  const maxIn = Math.max(...rawRecords.filter(inCut).map((r) => r.lsn));
  const minOut = Math.min(...rawRecords.filter((r) => !inCut(r)).map((r) => r.lsn));
  t.true(maxIn < minOut, `lsn ${maxIn} included, ${minOut} left out`);

  // And the images through the cut rebuild exactly the raw log through it.
  const reader = await NatsTransport.connect({ servers: url, name: "reader-co2" });
  t.teardown(() => reader.close());
  const image = new Uint8Array(BLOCKS * BLOCK_SIZE);
  for (const [i, lane] of [L0, L1].entries()) {
    const units = await fetchUnits(reader, "h-img", volume, derived[i]!, RangeSet.of(1, cut[lane]!));
    for (const u of units.sort((a, b) => a.firstSeq - b.firstSeq)) for (const r of openCoalescedPayload(key, u, u.payload)) image.set(r.data, r.lba * BLOCK_SIZE);
  }
  const rawLog = new Uint8Array(BLOCKS * BLOCK_SIZE);
  for (const r of rawRecords.filter(inCut).sort((a, b) => a.lsn - b.lsn)) rawLog.set(r.data, r.lba * BLOCK_SIZE);
  t.true(Buffer.from(image).equals(Buffer.from(rawLog)), "the images equal the raw log through the cut");
});
