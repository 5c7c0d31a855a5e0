import anyTest, { type TestFn } from "ava";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startVolumeWriter, type VolumeWriter } from "../../actors/writer/volume-writer.ts";
import { UnitOutbox } from "../../actors/writer/unit-outbox.ts";
import { systemClock } from "../../core/clock.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import type { TransportUnit } from "../../lanes/transport-unit.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, LANE, launchHolder, transport, VOLUME } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const hex = (u: TransportUnit) => Buffer.from(u.digest).toString("hex");

// Found by sim seed 524172: a restarted writer re-sealed the units its outbox recovered under its
// new term. A holder that saw those first took the new term as starting at their sequences and
// refused as stale_term the very same records re-sent under the old term from another holder's
// disk, so they were never receipted downstream and a power-loss cut stayed short for good.
test.serial("a restarted writer re-ships its unconfirmed units byte for byte under their own term, and a receipt under the older term proves them", async (t) => {
  const url = t.context.nats.url;
  const dir = mkdtempSync(join(tmpdir(), "custody-reship-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const keys = new KeyRing();
  const h = await launchHolder(url, keys, holderConfig("h-a"));
  const lane = () => h.holder.lane(VOLUME, LANE)!;
  const vdir = join(dir, "volume");
  await SmartWalVolume.create(vdir, { blockCount: 64, walCapacity: 4096 });
  const site = { id: "s-a", region: "r", az: "r-a", host: "h", deps: [] };
  const launch = async (term: number, firstSeq: number, sent: TransportUnit[]) => {
    const wt = await transport(url, `w1-term${term}`);
    const volume = await SmartWalVolume.open(vdir);
    const { outbox, recovered } = await UnitOutbox.open(nodeFileLayer, join(dir, "outbox"), systemClock);
    const writer: VolumeWriter = startVolumeWriter(
      { writerId: "w1", volume: VOLUME, term, lanes: [{ lane: LANE, fromLba: 0, toLba: 63, holders: ["h-a"], firstSeq }], contracts: [], holderSites: { "h-a": site }, topologyEpoch: 0, policyGeneration: 0, resendAfterMs: 200 },
      { transport: wt, clock: systemClock, volume, dataKey: new Uint8Array(32).fill(5), peers: keys, outbox, recovered, onUnit: (u) => sent.push(u) },
    );
    return { writer, recovered, async close() { writer.stop(); await volume.close(); await wt.close(); } };
  };
  const first: TransportUnit[] = [];
  const w1 = await launch(1, 1, first);
  try {
    for (let s = 1; s <= 5; s++) {
      await w1.writer.write(s, new Uint8Array(BLOCK_SIZE).fill(s));
      await w1.writer.sync();
    }
    await eventually(() => lane().retained.toString() === "1-5", "term 1's units admitted");
  } finally {
    // The writer process ends with nothing confirmed (no controller runs): its outbox keeps 1-5.
    await w1.close();
  }

  const again: TransportUnit[] = [];
  const w2 = await launch(2, 6, again);
  try {
    t.deepEqual(w2.recovered.map((u) => [u.firstSeq, u.term]), [[1, 1], [2, 1], [3, 1], [4, 1], [5, 1]], "the outbox recovered term 1's units");
    await eventually(() => again.length === 5, "re-shipped");
    t.deepEqual(again.map((u) => u.term), [1, 1, 1, 1, 1], "re-shipped under the term they were written in");
    t.deepEqual(again.map(hex), first.map(hex), "byte for byte: the same digests");
    t.is(w2.writer.counters.get("units_reshipped"), 5);
    // h-a has seen only term 1 (its receipts say writerTerm 1): they still prove the shared history below 6.
    const owed = () => w2.writer.owedTo(LANE, "h-a");
    await eventually(() => owed().isEmpty, "term 2's writer counts term-1 receipts of its re-shipped units", 10_000, () => owed().toString());
    t.is(lane().log.term, 1);
    await w2.writer.write(6, new Uint8Array(BLOCK_SIZE).fill(6));
    await w2.writer.sync();
    await eventually(() => lane().retained.toString() === "1-6" && lane().log.term === 2, "term 2's own write admitted");
    t.is(h.holder.counters.get("stale_term"), 0, "nothing was refused as fenced");
  } finally {
    await w2.close();
    await h.close();
  }
});
