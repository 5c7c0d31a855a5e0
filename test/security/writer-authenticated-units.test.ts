/**
 * Writer-authenticated units on a secured nats-server: h1 takes lanes l0 and l1 of `vol` from the
 * writer w1 AND from holder h0 (both principals may publish on h1's unit subjects, so the server's
 * permission check cannot tell them apart); h1 forwards l0 to h2. Both holders know the writer key
 * the key authority named for `vol`, and admit only units a writer attestation lists.
 */
import anyTest, { type TestFn } from "ava";
import { join } from "node:path";
import { startHolder, type Holder } from "../../actors/holder/holder.ts";
import { startVolumeWriter, type VolumeWriter } from "../../actors/writer/volume-writer.ts";
import { systemClock } from "../../core/clock.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { signUnitAttestation } from "../../custody/unit-attestation.ts";
import { WriterKeyring } from "../../custody/unit-authenticator.ts";
import { makeTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";
import { unitSubject } from "../../transport/protocol/subjects.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { encodeUnitMessage, SENDER_HEADER, SENT_THROUGH_HEADER, SESSION_HEADER, UNIT_ATTESTATION_HEADER } from "../../transport/unit-frames.ts";
import type { InboundMessage } from "../../transport/transport.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { blockData, e2eHolderConfig, site, tempDir } from "../e2e/e2e-fixture.ts";
import { eventually, KeyRing } from "../holder/holder-fixture.ts";
import { startSecuredBus, type PrincipalConnection, type SecuredBus } from "./secured-bus.ts";

const VOL = "vol";
const LANES = ["l0", "l1"];
const REGION = "sec";
const BLOCKS = 64;

interface Ctx {
  bus: SecuredBus;
  holders: Map<string, Holder>;
  writer: VolumeWriter;
  writerKey: ReturnType<typeof generateHolderKeyPair>;
  conns: Map<string, PrincipalConnection>;
  /** Messages w1 sent to h1 on l0, as h1 received them (captured for replays). */
  captured: InboundMessage[];
  stop: () => Promise<void>;
}
const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const bus = await startSecuredBus([
    { key: "w1", role: "writer", id: "w1", scope: { controlRegion: REGION, volume: VOL, lanes: LANES.map((lane) => ({ lane, firstHops: ["h1"] })) } },
    { key: "h0", role: "holder", id: "h0", scope: { controlRegion: REGION, lanes: LANES.map((lane) => ({ volume: VOL, lane, downstream: ["h1"] })) } },
    { key: "h1", role: "holder", id: "h1", scope: { controlRegion: REGION, lanes: LANES.map((lane) => ({ volume: VOL, lane, downstream: lane === "l0" ? ["h2"] : [] })) } },
    { key: "h2", role: "holder", id: "h2", scope: { controlRegion: REGION, lanes: [{ volume: VOL, lane: "l0", downstream: [] }] } },
  ]);
  const conns = new Map<string, PrincipalConnection>();
  const conn = async (key: string, name?: string) => {
    const c = await bus.connect(key, name);
    if (name === undefined) conns.set(key, c);
    return c;
  };
  const writerKey = generateHolderKeyPair();
  // What the key authority names: the writer key of `vol` from term 1 on.
  const writerKeys = new WriterKeyring().name(VOL, 1, writerKey.publicKey);
  const keys = new KeyRing();
  const holders = new Map<string, Holder>();
  const s = site("s-1", "us-east", "use1-az1");
  const lanesOf: Record<string, { lane: string; upstream: string[]; downstream?: string[] }[]> = {
    h2: [{ lane: "l0", upstream: ["h1"] }],
    h1: LANES.map((lane) => ({ lane, upstream: ["w1", "h0"], downstream: lane === "l0" ? ["h2"] : [] })),
  };
  for (const id of ["h2", "h1"]) {
    const c = await conn(id);
    keys.add(id, 1);
    holders.set(id, await startHolder(e2eHolderConfig(id, s, VOL, lanesOf[id]!), { transport: c.transport, clock: systemClock, privateKey: keys.privateKey(id), peers: keys, writerKeys }));
  }
  // A second connection of h1 sees what arrives on its l0 subject (h1 may subscribe there).
  const tap = await conn("h1", "h1-tap");
  const captured: InboundMessage[] = [];
  tap.transport.subscribe(unitSubject("h1", VOL, "l0"), (m) => void captured.push(m));
  await tap.transport.flush();
  await conn("h0");

  const w = await conn("w1");
  const dir = join(tempDir("custody-signed-units-"), "vol");
  await SmartWalVolume.create(dir, { blockCount: BLOCKS, walCapacity: 4096 });
  const volume = await SmartWalVolume.open(dir);
  const authority = new KeyAuthority("ka", "s-1");
  authority.authorize(VOL, "w1");
  const writer = startVolumeWriter(
    {
      writerId: "w1",
      volume: VOL,
      term: 1,
      lanes: LANES.map((lane, i) => ({ lane, fromLba: i * (BLOCKS / 2), toLba: (i + 1) * (BLOCKS / 2) - 1, holders: ["h1"] })),
      contracts: [],
      holderSites: { h1: s },
      topologyEpoch: 1,
      policyGeneration: 1,
    },
    { transport: w.transport, clock: systemClock, volume, dataKey: authority.dataKey(VOL, "w1"), peers: keys, writerKey: writerKey.privateKey },
  );
  t.context = {
    bus,
    holders,
    writer,
    writerKey,
    conns,
    captured,
    async stop() {
      writer.stop();
      await volume.close().catch(() => undefined);
      for (const h of holders.values()) await h.stop().catch(() => undefined);
      await bus.stop();
    },
  };
  for (let i = 0; i < 6; i++) await writer.write(i % 2 === 0 ? 0 : BLOCKS / 2, blockData(i));
  await eventually(() => retained(t.context, "h2", "l0").has(3) && retained(t.context, "h1", "l1").has(3), "signed units reach h1 on both lanes and h2 by forwarding", 10_000);
});
test.after.always(async (t) => {
  await t.context.stop?.();
});

const lane = (c: Ctx, h: string, l: string) => c.holders.get(h)!.lane(VOL, l)!;
const retained = (c: Ctx, h: string, l: string) => lane(c, h, l).retained;
const count = (c: Ctx, h: string, code: string) => c.holders.get(h)!.counters.get(code);

/** Publishes `units` on h1's subject of `l` with h0's credentials, posing as the writer. */
function inject(c: Ctx, l: string, units: readonly TransportUnit[], attestation?: string): void {
  const body = encodeUnitMessage(units.map((u, i) => ({ data: encodeMessage(unitSpec, u), sentThrough: 1_000_000 + i })));
  const headers: Record<string, string> = { [SENDER_HEADER]: "w1", [SESSION_HEADER]: "1", [SENT_THROUGH_HEADER]: String(1_000_000 + units.length - 1) };
  if (attestation !== undefined) headers[UNIT_ATTESTATION_HEADER] = attestation;
  c.conns.get("h0")!.transport.publish(unitSubject("h1", VOL, l), body, { headers });
}

const forged = (l: string, first: number, term = 1): TransportUnit =>
  makeTransportUnit({ volume: VOL, lane: l, term, firstSeq: first, lastSeq: first + 1, commitTs: [1, 2], payload: new Uint8Array(64).fill(9) });

/** Waits until h1 counted `code` once more than `before`, then checks nothing of `seq` was admitted. */
async function refusedAt(t: { false(v: boolean, m?: string): void; deepEqual(a: unknown, b: unknown, m?: string): void }, c: Ctx, code: string, before: number, l: string, seq: number): Promise<void> {
  await eventually(() => count(c, "h1", code) > before, `h1 counts ${code}`, 5000, () => JSON.stringify(c.holders.get("h1")!.counters.snapshot()));
  t.false(retained(c, "h1", l).has(seq), "h1 admitted none of the injected sequences");
  t.deepEqual(c.conns.get("h0")!.violations, [], "the server let every injection through: only the attestation refuses it");
}

/** The writer still gets through: a new write reaches h1 and, forwarded, h2. */
async function stillServing(c: Ctx): Promise<void> {
  const ack = await c.writer.write(1, blockData(77));
  const seq = ack.pieces[0]!.seq;
  await eventually(() => retained(c, "h1", "l0").has(seq) && retained(c, "h2", "l0").has(seq), "the writer's next unit reaches h1 and h2", 10_000);
}

test.serial("the writer's signed units are admitted at the first hop and, with the writer's signature forwarded unchanged, at the second", async (t) => {
  const c = t.context;
  t.true(retained(c, "h1", "l0").has(1) && retained(c, "h2", "l0").has(1));
  t.is(count(c, "h1", "unit_unsigned") + count(c, "h2", "unit_unsigned") + count(c, "h2", "unit_bad_signature"), 0);
  t.true(c.captured.some((m) => m.headers[UNIT_ATTESTATION_HEADER] !== undefined), "the writer's messages carry an attestation");
});

test.serial("a frame from another principal permitted on the same unit subject is refused as unsigned although NATS let it through, and h1 admits nothing of it", async (t) => {
  const c = t.context;
  const before = count(c, "h1", "unit_unsigned");
  inject(c, "l0", [forged("l0", 5_001), forged("l0", 5_003)]);
  await refusedAt(t, c, "unit_unsigned", before, "l0", 5_001);
  await stillServing(c);
});

test.serial("a frame signed with a key that is not the volume's writer key (the injecting holder's own) is refused as a bad signature", async (t) => {
  const c = t.context;
  const before = count(c, "h1", "unit_bad_signature");
  const u = forged("l0", 6_001);
  const own = generateHolderKeyPair();
  const token = Buffer.from(signUnitAttestation(own.privateKey, VOL, "l0", 1, [u])).toString("base64");
  inject(c, "l0", [u], token);
  await refusedAt(t, c, "unit_bad_signature", before, "l0", 6_001);
  await stillServing(c);
});

test.serial("a valid writer attestation replayed for another lane, another term or another unit lists none of them: each is refused and nothing is admitted", async (t) => {
  const c = t.context;
  const real = c.captured.find((m) => m.headers[UNIT_ATTESTATION_HEADER] !== undefined)!;
  const token = real.headers[UNIT_ATTESTATION_HEADER]!;
  const before = count(c, "h1", "unit_not_attested");
  // Another lane: the attestation names l0.
  inject(c, "l1", [forged("l1", 7_001)], token);
  await refusedAt(t, c, "unit_not_attested", before, "l1", 7_001);
  // Another term and another unit of the attested lane.
  inject(c, "l0", [forged("l0", 7_101, 2)], token);
  await refusedAt(t, c, "unit_not_attested", before + 1, "l0", 7_101);
  inject(c, "l0", [forged("l0", 7_201)], token);
  await refusedAt(t, c, "unit_not_attested", before + 2, "l0", 7_201);
  // The captured message itself, replayed whole on another lane's subject: its units name l0, so
  // l1 refuses them (as a replayed credit figure or as another lane's units).
  const l1 = retained(c, "h1", "l1");
  const refusals = () => count(c, "h1", "wrong_lane") + count(c, "h1", "replayed_unit");
  const refusedBefore = refusals();
  c.conns.get("h0")!.transport.publish(unitSubject("h1", VOL, "l1"), real.data, { headers: { ...real.headers, [SENDER_HEADER]: "w1" } });
  await eventually(() => refusals() > refusedBefore, "h1 refuses the replayed frame on l1", 5000, () => JSON.stringify(c.holders.get("h1")!.counters.snapshot()));
  await stillServing(c);
  t.true(retained(c, "h1", "l1").equals(l1), "l1 holds nothing new");
});

test.serial("a malformed attestation and one for a volume whose writer key nobody named are refused with their own codes", async (t) => {
  const c = t.context;
  const malformed = count(c, "h1", "unit_attestation_malformed");
  inject(c, "l0", [forged("l0", 8_001)], "AAAA");
  await refusedAt(t, c, "unit_attestation_malformed", malformed, "l0", 8_001);
  const unknown = count(c, "h1", "unit_signer_unknown");
  const token = Buffer.from(signUnitAttestation(c.writerKey.privateKey, "other", "l0", 1, [forged("l0", 8_101)])).toString("base64");
  inject(c, "l0", [forged("l0", 8_101)], token);
  await refusedAt(t, c, "unit_signer_unknown", unknown, "l0", 8_101);
  await stillServing(c);
});
