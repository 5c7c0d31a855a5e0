import anyTest, { type TestFn } from "ava";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startVolumeWriter } from "../../actors/writer/volume-writer.ts";
import { UnitOutbox } from "../../actors/writer/unit-outbox.ts";
import { systemClock } from "../../core/clock.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import type { TransportUnit } from "../../lanes/transport-unit.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, KeyRing, LANE, transport, VOLUME } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

// Issue #22: a derived (coalesced) unit holds fewer records than sequences. A restarted writer's
// outbox recovers it with the raw units, and it must be re-shipped too, not refused as malformed.
test.serial("a restarted writer re-ships the derived units its outbox recovered, byte for byte, beside the raw ones", async (t) => {
  const url = t.context.nats.url;
  const dir = mkdtempSync(join(tmpdir(), "custody-reship-co-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const keys = new KeyRing();
  const vdir = join(dir, "volume");
  await SmartWalVolume.create(vdir, { blockCount: 64, walCapacity: 4096 });
  const site = { id: "s-a", region: "r", az: "r-a", host: "h", deps: [] };
  const derived = `${LANE}-coalesced`;
  const launch = async (term: number, firstSeq: number, sent: TransportUnit[]) => {
    const wt = await transport(url, `w1-co-term${term}`);
    const volume = await SmartWalVolume.open(vdir);
    const { outbox, recovered } = await UnitOutbox.open(nodeFileLayer, join(dir, "outbox"), systemClock);
    const writer = startVolumeWriter(
      { writerId: "w1", volume: VOLUME, term, lanes: [{ lane: LANE, fromLba: 0, toLba: 63, holders: ["h-raw"], firstSeq }], contracts: [], holderSites: { "h-raw": site, "h-img": site }, topologyEpoch: 0, policyGeneration: 0, coalesced: { holders: ["h-img"], windowRecords: 4 } },
      { transport: wt, clock: systemClock, volume, dataKey: new Uint8Array(32).fill(5), peers: keys, outbox, recovered, onUnit: (u) => sent.push(u) },
    );
    return { writer, recovered, async close() { writer.stop(); await volume.close(); await wt.close(); } };
  };
  const first: TransportUnit[] = [];
  const w1 = await launch(1, 1, first);
  try {
    for (const lba of [1, 2, 1, 1, 3, 3, 3, 2]) await w1.writer.write(lba, new Uint8Array(BLOCK_SIZE).fill(lba));
    await w1.writer.sync();
    await eventually(() => first.filter((u) => u.lane === derived).length === 2, "two derived windows sealed");
  } finally {
    await w1.close(); // no holder ever receipted anything: the outbox keeps every unit
  }
  const again: TransportUnit[] = [];
  const w2 = await launch(2, 9, again);
  try {
    const rec = (lane: string) => w2.recovered.filter((u) => u.lane === lane).map((u) => [u.firstSeq, u.lastSeq]);
    t.deepEqual(rec(derived), [[1, 4], [5, 8]]);
    t.is(w2.writer.counters.get("units_reshipped"), w2.recovered.length);
    t.is(w2.writer.counters.get("reship_payload_decrypt_failed"), 0);
    const hex = (u: TransportUnit) => Buffer.from(u.digest).toString("hex");
    t.deepEqual(again.filter((u) => u.lane === derived).map(hex), first.filter((u) => u.lane === derived).map(hex), "the same derived units, byte for byte");
  } finally {
    await w2.close();
  }
});
