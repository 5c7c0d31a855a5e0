/**
 * Bounded memory under a trickle with custody stalled: the writer keeps what custody has not taken
 * (for re-sending), but only up to `maxCustodyBacklogBytes`; at the bound, writes wait
 * (backpressure) and the lag is visible. Nothing grows without limit while the first hop is away,
 * and when it comes the backlog drains and the waiting writes go through.
 */
import anyTest, { type TestFn } from "ava";
import { startVolumeWriter } from "../../actors/writer/volume-writer.ts";
import { systemClock } from "../../core/clock.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, eventually, KeyRing, launchHolder, site, tempDir } from "./e2e-fixture.ts";
import { join } from "node:path";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const BOUND = 256 * 1024;
const TRICKLE_MS = 60_000;

test.serial("over a 60 s trickle with custody stalled the writer's backlog stays under its bound, writes wait, and they all go through once the first hop comes", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  keys.add("h-slow", 1);
  const dir = join(tempDir("custody-trickle-"), "vol");
  await SmartWalVolume.create(dir, { blockCount: 64, walCapacity: 4096 });
  const volume = await SmartWalVolume.open(dir);
  const transport = await NatsTransport.connect({ servers: url, name: "w-trickle" });
  t.teardown(() => transport.close());
  const authority = new KeyAuthority("ka", "s-1");
  authority.authorize("vol-t", "w1");
  const writer = startVolumeWriter(
    {
      writerId: "w1",
      volume: "vol-t",
      term: 1,
      lanes: [{ lane: "l0", fromLba: 0, toLba: 63, holders: ["h-slow"] }],
      contracts: [],
      holderSites: { "h-slow": site("s-1", "r1", "az1") },
      topologyEpoch: 1,
      policyGeneration: 1,
      maxCustodyBacklogBytes: BOUND,
      retainUntil: "receipted",
    },
    { transport, clock: systemClock, volume, dataKey: authority.dataKey("vol-t", "w1"), peers: keys },
  );
  t.teardown(() => writer.stop());
  // The trickle: one 4 KiB write every 20 ms, each waiting its turn; the first hop is not there.
  let acked = 0;
  let stop = false;
  const trickle = (async () => {
    for (let i = 0; !stop; i++) {
      await writer.write(i % 64, blockData(i));
      acked++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const samples: number[] = [];
  const started = Date.now();
  while (Date.now() - started < TRICKLE_MS) {
    await new Promise((r) => setTimeout(r, 1_000));
    samples.push(writer.custodyBacklogBytes());
  }
  const maxSample = Math.max(...samples);
  t.true(maxSample <= BOUND + 2 * (BLOCK_SIZE + 512), `backlog peaked at ${maxSample} bytes, bound ${BOUND}`);
  t.true(writer.counters.get("write_backpressure") > 0, "writes waited at the bound");
  const stalledAt = acked;
  t.true(stalledAt < TRICKLE_MS / 20 / 2, `writes stalled (${stalledAt} acknowledged) instead of piling up`);
  t.log(`acknowledged ${stalledAt} writes in ${TRICKLE_MS / 1000} s with custody stalled; backlog samples max ${maxSample} B`);

  // The first hop arrives: the backlog drains and the waiting writes go through.
  const h = await launchHolder(url, keys, e2eHolderConfig("h-slow", site("s-1", "r1", "az1"), "vol-t", [{ lane: "l0", upstream: ["w1"] }]));
  t.teardown(() => h.close());
  await eventually(() => acked > stalledAt + 50, "writes flow again", 30_000);
  stop = true;
  await trickle;
  await writer.sync();
  await eventually(() => writer.custodyBacklogBytes() === 0, "the backlog drained", 30_000);
});
