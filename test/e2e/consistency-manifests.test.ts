/**
 * Consistency manifests on real NATS: one volume on two lanes, each lane held by different RAM
 * holders. The writer ships its cuts across the lanes, the holders keep them beside the ranges
 * they cover and list them in their receipts, and the controller reports a cut across both lanes
 * only where both lanes' ranges and a manifest naming exactly that cut survive.
 */
import { operatorCommit } from "../kit/operator-commit.ts";
import anyTest, { type TestFn } from "ava";
import { startController } from "../../actors/controller/controller.ts";
import { manifestId } from "../../actors/controller/receipted-manifests.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { rawPublicKey } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { LossKind } from "../../policies/index.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { TransportDecorator } from "../../transport/transport-decorator.ts";
import type { MessageHandler, SubscribeOptions, TransportSubscription } from "../../transport/transport.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, eventually, KeyRing, launchHolder, launchWriter, site, systemClock } from "./e2e-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const VOLUME = "vol-mf";
const BLOCKS = 64;
/** Lane `a` holds LBAs 0..31, lane `b` 32..63. */
const SPLIT = 32;
const SITES = {
  "s-w": site("s-w", "r1", "az1"),
  "s-a": site("s-a", "r1", "az2"),
  "s-b": site("s-b", "r1", "az3"),
  "s-b2": site("s-b2", "r2", "az4"),
  "s-v": site("s-v", "r3", "az9"),
};
const WRITER_LOST = "writer's AZ lost";
const B_LOST = "lane b's first store lost";

/**
 * A holder's connection whose inbound unit subjects can be cut (a real partition of its data
 * path): it stays alive and keeps receipting what it holds, but receives nothing new.
 */
class CuttableInbound extends TransportDecorator {
  cut = false;
  override subscribe(subject: string, handler: MessageHandler, opts?: SubscribeOptions): TransportSubscription {
    return super.subscribe(subject, (m) => (this.cut && subject.startsWith("custody.v1.unit.") ? undefined : handler(m)), opts);
  }
}

test.serial("a cut across two lanes is reported only where both lanes' ranges and its manifest survive: the newest manifest while both holders live, the newest one the survivors still cover once a lane's holder is struck, the base once nothing covers a lane — never a mix of lane heads", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka", "s-v");
  const hA = await launchHolder(url, keys, e2eHolderConfig("h-a", SITES["s-a"], VOLUME, [{ lane: "a", upstream: ["w1"] }]));
  t.teardown(() => hA.close());
  const hB = await launchHolder(url, keys, e2eHolderConfig("h-b", SITES["s-b"], VOLUME, [{ lane: "b", upstream: ["w1"] }]));
  t.teardown(() => hB.close());
  const b2Transport = new CuttableInbound(await NatsTransport.connect({ servers: url, name: "h-b2" }));
  const hB2 = await launchHolder(url, keys, e2eHolderConfig("h-b2", SITES["s-b2"], VOLUME, [{ lane: "b", upstream: ["w1"] }]), { transport: b2Transport });
  t.teardown(async () => {
    await hB2.close();
    await b2Transport.close();
  });

  const ct = await NatsTransport.connect({ servers: url, name: "ctl-mf" });
  t.teardown(() => ct.close());
  const { log } = await initJetStreamControlLog(ct.connection, { region: "r-mf" });
  const controller = await startController(
    {
      controllerId: "ctl",
      region: "r-mf",
      evalIntervalMs: 100,
      topology: {
        volume: VOLUME,
        lanes: ["a", "b"],
        writerSite: "s-w",
        sites: Object.values(SITES),
        holderSites: { "h-a": "s-a", "h-b": "s-b", "h-b2": "s-b2", vault: "s-v" },
        bases: [{ id: "genesis", holder: "vault", cut: { a: 0, b: 0 }, bytes: 0 }],
        keyAuthorities: [{ id: "ka", site: "s-v" }],
        links: [],
        recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
        scenarios: [
          { name: WRITER_LOST, losses: [{ domain: "az:az1", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: true },
          { name: B_LOST, losses: [{ domain: "az:az3", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: false },
        ],
        timelines: [],
        staleAfterMs: 60_000,
        releasable: [],
      },
    },
    { transport: ct, clock: systemClock, store: log },
  );
  t.teardown(() => controller.stop());
  const ids = ["h-a", "h-b", "h-b2"];
  await controller.bootstrap(ids.map((h) => ({ holderId: h, incarnation: 1, publicKey: rawPublicKey(keys.key(h, 1)!), failureDomain: h })), ids);
  const rig = await launchWriter({
    url,
    writerId: "w1",
    volume: VOLUME,
    blockCount: BLOCKS,
    lanes: [
      { lane: "a", fromLba: 0, toLba: SPLIT - 1, holders: ["h-a"] },
      { lane: "b", fromLba: SPLIT, toLba: BLOCKS - 1, holders: ["h-b", "h-b2"] },
    ],
    contracts: [],
    sites: { "h-a": SITES["s-a"], "h-b": SITES["s-b"], "h-b2": SITES["s-b2"] },
    keys,
    authority,
  });
  t.teardown(() => rig.close());

  const scenario = (name: string) => controller.status()?.scenarios.find((s) => s.name === name);
  const cutOf = (name: string) => Object.fromEntries(scenario(name)?.cut ?? []) as Record<string, number>;
  const kept = (h: typeof hA, lane: string) => h.holder.lane(VOLUME, lane)!.manifests();
  const retained = (h: typeof hA, lane: string) => h.holder.lane(VOLUME, lane)!.retained;
  /**
   * Writes alternate between the lanes, starting on lane b (so no cut after an earlier phase keeps
   * that phase's lane b head); the last one spans both (its LSN's cut is unique to it).
   */
  async function writePhase(seed: number, n: number): Promise<Record<string, number>> {
    for (let i = 0; i < n; i++) {
      const lane = i % 2 === 0 ? "b" : "a";
      const lba = (lane === "a" ? 0 : SPLIT) + ((seed * 7 + i * 3) % (SPLIT - 1));
      await rig.write(lba, blockData(seed * 1000 + i));
    }
    await rig.write(SPLIT - 1, new Uint8Array([...blockData(seed * 1000 + 900), ...blockData(seed * 1000 + 901)]));
    await rig.writer.sync();
    return rig.writer.heads();
  }
  const sameCut = (x: Record<string, number>, y: Record<string, number>) => x.a === y.a && x.b === y.b;
  const writerCuts = () => rig.writer.manifests().map((m) => m.lanes);

  // Phase 1: both lanes' holders, h-b2 included, hold everything and keep the newest manifest.
  const h1 = await writePhase(1, 20);
  await eventually(() => kept(hB2, "b").some((m) => m.cut[0]![1] === h1.a && m.cut[1]![1] === h1.b) && retained(hB2, "b").coversAll(RangeSet.of(1, h1.b)), "h-b2 keeps phase 1's last manifest beside its range", 10_000);
  await eventually(() => sameCut(cutOf(WRITER_LOST), h1), "the controller reports phase 1's manifest", 10_000, () => JSON.stringify(scenario(WRITER_LOST)));
  t.is(scenario(WRITER_LOST)!.manifest, manifestId(h1));

  // h-b2 is cut off from its lane's data path: alive and receipting, its copy of lane b stops at phase 1.
  b2Transport.cut = true;
  // Phase 2 starts on lane b, so every manifest after phase 1 names a sequence of b that h-b2 lacks.
  const h2 = await writePhase(2, 20);
  t.true(h2.a! > h1.a! && h2.b! > h1.b!);
  await eventually(() => sameCut(cutOf(WRITER_LOST), h2), "with both lanes' holders alive the cut is the newest manifest", 10_000, () => JSON.stringify(scenario(WRITER_LOST)));
  t.is(scenario(WRITER_LOST)!.manifest, manifestId(h2));
  t.true(writerCuts().some((c) => sameCut(c, h2)), "the reported cut is one the writer made");
  // Losing h-b's site leaves lane b on h-b2 through phase 1: the newest manifest both lanes still cover.
  await eventually(() => sameCut(cutOf(B_LOST), h1), "losing lane b's first store falls back to phase 1's manifest", 10_000, () => JSON.stringify(scenario(B_LOST)));
  t.is(scenario(B_LOST)!.manifest, manifestId(h1));
  t.true(scenario(B_LOST)!.contributors.includes("h-b2"));

  // Strike h-b: the control log marks it failed, so it contributes nothing, its manifests included.
  await operatorCommit(log, { type: "declare_failure", scope: "holder", domain: "h-b", holderIds: ["h-b"] });
  await eventually(() => sameCut(cutOf(WRITER_LOST), h1), "after the strike the cut is the newest manifest the survivors cover", 10_000, () => JSON.stringify(scenario(WRITER_LOST)));
  const struck = scenario(WRITER_LOST)!;
  t.is(struck.manifest, manifestId(h1));
  t.false(sameCut(cutOf(WRITER_LOST), { a: h2.a!, b: h1.b! }), "never lane a's head with lane b's surviving head: no manifest names that pair");
  t.false(struck.contributors.includes("h-b"));

  // Strike h-b2 too: nothing holds lane b beyond the base (and no cut has lane a ahead of a base lane b), so the cut is the base's.
  await operatorCommit(log, { type: "declare_failure", scope: "holder", domain: "h-b2", holderIds: ["h-b2"] });
  await eventually(() => sameCut(cutOf(WRITER_LOST), { a: 0, b: 0 }), "with no lane-b holder left the cut is the base", 10_000, () => JSON.stringify(scenario(WRITER_LOST)));
  t.like(scenario(WRITER_LOST), { manifest: null, base: "genesis" });
  t.true(hA.holder.counters.get("manifest_kept") > 0 && rig.writer.counters.get("manifest_shipped") > 0);
});
