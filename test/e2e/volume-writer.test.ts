import anyTest, { type TestFn } from "ava";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { openPayload } from "../../transport/protocol/wire/unit-payload.ts";
import { WriteRejectedError, UnknownContractError, WriterFencedError } from "../../actors/writer/writer-config.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, KeyRing, launchHolder, launchWriter, settle, site } from "./e2e-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const VOL = "wvol";
const sites = {
  near: site("s-near", "us-east", "use1-az1"),
  far: site("s-far", "us-east", "use1-az2"),
};
const holderSites = { "h-near": sites.near, "h-far": sites.far };
const contracts = [{ name: "az-loss", losses: ["az:use1-az1"] }, { name: "two-copies", losses: [], copies: 2 }];

async function rig(t: { context: NatsTestContext }, lanes = [{ lane: "l0", fromLba: 0, toLba: 63, holders: ["h-near", "h-far"] }]) {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const laneCfg = lanes.map((l) => ({ lane: l.lane, upstream: ["w1"] }));
  const near = await launchHolder(url, keys, e2eHolderConfig("h-near", sites.near, VOL, laneCfg));
  const far = await launchHolder(url, keys, e2eHolderConfig("h-far", sites.far, VOL, laneCfg));
  const authority = new KeyAuthority("ka-east", "s-near");
  const w = await launchWriter({ url, writerId: "w1", volume: VOL, blockCount: 64, lanes, contracts, sites: holderSites, keys, authority });
  const close = async () => {
    await w.close();
    await near.close();
    await far.close();
  };
  return { w, near, far, authority, close };
}

test.serial("a protected sync resolves only after a receipt from a holder outside the writer's AZ covers every write", async (t) => {
  const { w, far, close } = await rig(t);
  try {
    for (let i = 0; i < 10; i++) await w.write(i, blockData(i));
    await w.writer.sync("az-loss", 5000);
    const through = w.writer.protectedThrough("az-loss", "l0");
    t.true(through >= 10);
    t.true(far.holder.lane(VOL, "l0")!.log.retained.covers(1, 10));
  } finally {
    await close();
  }
});

test.serial("a local sync adds no WAN wait: it resolves while no holder outside the AZ is reachable", async (t) => {
  const { w, far, close } = await rig(t);
  try {
    await far.close(); // the only holder outside the AZ is gone: no receipt can prove az-loss
    await w.write(0, blockData(1));
    const r = await w.writer.sync(undefined);
    t.true(r.durableLsn >= 1);
    const err = await t.throwsAsync(w.writer.sync("az-loss", 200));
    t.is((err as { code?: string }).code, "protection_timeout");
  } finally {
    await close();
  }
});

test.serial("units are built from the write's own buffer and sealed: holders see ciphertext that only the data key opens", async (t) => {
  const { w, near, authority, close } = await rig(t);
  try {
    const buf = blockData(7);
    const want = new Uint8Array(buf);
    const p = w.write(3, buf);
    buf.fill(0xee); // the caller reuses its buffer at once (G4: nothing is re-read later)
    await p;
    await w.writer.sync("two-copies", 5000);
    const unit = w.units.find((u) => u.firstSeq <= 1 && 1 <= u.lastSeq)!;
    t.false(Buffer.from(unit.payload).includes(Buffer.from(want.subarray(0, 64))), "plaintext never appears in the payload");
    const recs = openPayload(authority.dataKey(VOL, "w1"), unit, unit.payload);
    t.deepEqual(recs[0]!.data, want);
    t.is(recs[0]!.lba, 3);
    t.true(near.holder.lane(VOL, "l0")!.log.retained.has(1));
  } finally {
    await close();
  }
});

test.serial("a volume spread over two lanes by LBA range keeps a per-lane sequence and records cross-lane cuts", async (t) => {
  const lanes = [
    { lane: "lo", fromLba: 0, toLba: 31, holders: ["h-near", "h-far"] },
    { lane: "hi", fromLba: 32, toLba: 63, holders: ["h-near", "h-far"] },
  ];
  const { w, close } = await rig(t, lanes);
  try {
    const ack = await w.writer.write(30, blockData(1, 4)); // spans lo (30,31) and hi (32,33)
    t.deepEqual(ack.pieces, [{ lane: "lo", seq: 1 }, { lane: "hi", seq: 1 }]);
    await w.writer.write(40, blockData(2));
    await w.writer.sync("two-copies", 5000);
    t.deepEqual(w.writer.heads(), { lo: 1, hi: 2 });
    const last = w.writer.manifests().at(-1)!;
    t.deepEqual(last.lanes, { lo: 1, hi: 2 });
  } finally {
    await close();
  }
});

test.serial("bad writes and unknown contracts get typed errors, are counted, and send nothing", async (t) => {
  const { w, close } = await rig(t);
  try {
    await t.throwsAsync(w.writer.write(0, new Uint8Array(100)), { instanceOf: WriteRejectedError });
    await t.throwsAsync(w.writer.write(64, blockData(1)), { instanceOf: WriteRejectedError });
    await t.throwsAsync(w.writer.sync("no-such"), { instanceOf: UnknownContractError });
    t.is(w.writer.counters.get("write_rejected"), 2);
    t.is(w.writer.counters.get("units_sent"), 0);
    t.deepEqual(w.writer.heads(), { l0: 0 });
  } finally {
    await close();
  }
});

test.serial("a fenced writer admits no write and its pending protected sync fails", async (t) => {
  const { w, far, close } = await rig(t);
  try {
    await far.close();
    await w.writer.write(0, blockData(1));
    const pending = w.writer.sync("az-loss", 5000);
    await settle(50);
    w.writer.fence(2);
    await t.throwsAsync(pending, { instanceOf: WriterFencedError });
    await t.throwsAsync(w.writer.write(1, blockData(2)), { instanceOf: WriterFencedError });
    t.is(w.writer.state(), "fenced");
  } finally {
    await close();
  }
});

test.serial("with custody off the same writer only writes SmartWAL: no unit is built or sent, and lanes need no holders", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka", "s-near");
  const { launchWriter: lw } = await import("./e2e-fixture.ts");
  const w = await lw({ url, writerId: "w-off", volume: "offvol", blockCount: 16, lanes: [{ lane: "l0", fromLba: 0, toLba: 15, holders: [] }], contracts: [], sites: {}, keys, authority, custody: false });
  try {
    const ack = await w.writer.write(2, blockData(3));
    t.deepEqual(ack.pieces, []);
    await w.writer.sync();
    t.is(w.writer.counters.get("units_sent"), 0);
    t.deepEqual(await w.volume.read(2), blockData(3));
  } finally {
    await w.close();
  }
});
