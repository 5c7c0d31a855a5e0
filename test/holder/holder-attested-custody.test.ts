/**
 * Writer attestations beside stored and transferred custody, on a real nats-server and real spill
 * files: a custody transfer offer is checked against the writer's signature like ingress, a
 * holder's own offers carry the tokens its units arrived with, and a spill record of the format
 * written before attestations were stored (segment form v1) is still custody, read as unattested.
 */
import anyTest, { type TestFn } from "ava";
import { copyOverNats } from "../../actors/repair/copy-over-nats.ts";
import { fetchUnits } from "../../actors/repair/custody-reader.ts";
import { encodeTransferOffer } from "../../transport/protocol/index.ts";
import { Arena } from "../../arena/arena.ts";
import { decodeSegment, SEGMENT_ATTESTED_VERSION, SEGMENT_FORMAT_VERSION } from "../../arena/segment-codec.ts";
import { SpillSet } from "../../arena/spill-set.ts";
import { systemClock } from "../../core/clock.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { signUnitAttestation } from "../../custody/unit-attestation.ts";
import { WriterKeyring } from "../../custody/unit-authenticator.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { TransportUnit } from "../../lanes/transport-unit.ts";
import { transferSubject } from "../../transport/protocol/subjects.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { unitRecordBytes } from "../../arena/segment.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, LANE, launchHolder, settle, tempDir, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const writerKey = generateHolderKeyPair();
/** What the key authority names: the writer key of vol1 from term 1 on. */
const writerKeys = () => new WriterKeyring().name(VOLUME, 1, writerKey.publicKey);

/** The writer's attestation token (base64) over `units`, signed with `key`. */
function attest(units: readonly TransportUnit[], key = writerKey.privateKey): string {
  return Buffer.from(signUnitAttestation(key, VOLUME, LANE, units[0]!.term, units.map((u) => ({ firstSeq: u.firstSeq, lastSeq: u.lastSeq, digest: u.digest })))).toString("base64");
}

/** Publishes a transfer offer of `units` to `to` as holder `from`, with `tokens` (none: a v1 offer). */
function offer(t: { publish(subject: string, data: Uint8Array): void }, to: string, units: readonly TransportUnit[], tokens: string[], offerId: number): void {
  t.publish(transferSubject(to), encodeTransferOffer({ from: "h-rogue", to, volume: VOLUME, lane: LANE, offerId, units: units.map((u) => encodeMessage(unitSpec, u)) }, tokens));
}

test.serial("a transfer offer whose units no valid writer attestation lists — forged bytes under a genuine token, no token, another key's token, a malformed token — is refused and counted, and the receiver's state is unchanged; the genuine offer is admitted", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  // The receiver serves another volume: vol1/l0 reaches it only by transfer, so any admission shows.
  const n = await launchHolder(url, keys, holderConfig("h-recv", { lanes: [{ volume: "other", lane: "l0", upstream: ["w9"], downstream: [] }] }), { writerKeys: writerKeys() });
  const rogue = await transport(url, "h-rogue");
  const count = (code: string) => n.holder.counters.get(code);
  try {
    const genuine = [unit(1, 2, 2048), unit(3, 1, 2048)];
    const token = attest(genuine);
    // Forged bytes: the genuine units' identity, other payload (a new digest), the genuine token.
    const forged = genuine.map((u) => unit(u.firstSeq, u.lastSeq - u.firstSeq + 1, 2048));
    const cases: [string, TransportUnit[], string[]][] = [
      ["transfer_unit_not_attested", forged, [token]],
      ["transfer_unit_unsigned", genuine, []],
      ["transfer_unit_bad_signature", genuine, [attest(genuine, generateHolderKeyPair().privateKey)]],
      ["transfer_unit_attestation_malformed", genuine, [Buffer.from("not an attestation").toString("base64")]],
    ];
    for (const [i, [code, units, tokens]] of cases.entries()) {
      offer(rogue, "h-recv", units, tokens, i + 1);
      await eventually(() => count(code) === 1, `the receiver counts ${code}`, 5_000, () => JSON.stringify(n.holder.counters.snapshot()));
      t.is(n.holder.lane(VOLUME, LANE), undefined, `${code}: no lane, arena or obligation was created`);
    }
    t.false(n.log.some((e) => e.type === "transfer_admitted"), "nothing was admitted");

    // The same units with the writer's own token are custody at the receiver.
    const refusals = () => Object.entries(n.holder.counters.snapshot()).filter(([k]) => k.startsWith("transfer_unit_"));
    const before = refusals();
    offer(rogue, "h-recv", genuine, [token], 9);
    await eventually(() => n.holder.lane(VOLUME, LANE)?.retained.covers(1, 3) === true, "the attested offer is admitted");
    t.deepEqual(refusals(), before, "the admitted offer refused nothing");
  } finally {
    await rogue.close();
    await n.close();
  }
});

test.serial("a holder's own transfer offers carry the writer attestations its units arrived with, so a neighbor that checks units takes custody of them", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const n = await launchHolder(url, keys, holderConfig("h-nbr", {
    lanes: [{ volume: "other", lane: "l0", upstream: ["w9"], downstream: [] }],
    arena: { segmentBytes: 64 * 1024, limitBytes: 8 * 1024 * 1024, maxOutstandingCredit: 256 * 1024, maxUnitBytes: 16 * 1024 },
  }), { writerKeys: writerKeys() });
  const o = await launchHolder(url, keys, holderConfig("h-orig", {
    arena: { segmentBytes: 64 * 1024, limitBytes: 512 * 1024, maxOutstandingCredit: 128 * 1024, maxUnitBytes: 16 * 1024 },
    transferNeighbor: "h-nbr",
    pressureRatio: 0.5,
  }), { writerKeys: writerKeys() });
  const wt = await transport(url, "writer");
  const w = new Writer(wt, "h-orig");
  try {
    const UNITS = 120;
    for (let s = 1; s <= UNITS; s += 4) {
      const batch = [0, 1, 2, 3].map((i) => unit(s + i, 1, 8 * 1024));
      const token = attest(batch);
      for (const u of batch) w.sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u), attestation: token });
    }
    const moved = () => n.holder.lane(VOLUME, LANE)?.retained ?? RangeSet.EMPTY;
    await eventually(() => o.log.some((e) => e.type === "transferred_out"), "the origin transferred custody after the neighbor's receipt", 20_000, () => JSON.stringify({ origin: o.holder.counters.snapshot(), neighbor: n.holder.counters.snapshot() }));
    t.false(moved().isEmpty, "the neighbor holds what it was offered");
    const refusals = Object.entries(n.holder.counters.snapshot()).filter(([k, v]) => k.startsWith("transfer_unit_") && v > 0);
    t.deepEqual(refusals, [], "no offered unit lacked the writer's attestation");
    t.is(o.holder.counters.get("unit_unsigned"), 0);
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await o.close();
    await n.close();
  }
});

test.serial("a spill record in the format written before attestations were stored (segment form v1) still reads: a restarted holder adopts it as custody and serves its units, as unattested", async (t) => {
  const url = t.context.nats.url;
  const dir = tempDir();
  // The old format, byte for byte: an export without attestations is what every earlier build wrote.
  const units = [unit(1, 1, 2048), unit(2, 3, 2048), unit(5, 1, 2048)];
  /** One sealed segment of `units`, each stored with the token `tokenOf` gives it; its export form. */
  const exported = (tokenOf: (first: number) => string | undefined): Uint8Array => {
    const arena = new Arena({ segmentBytes: 64 * 1024, maxUnitBytes: 32 * 1024, initialBytes: 256 * 1024, incrementBytes: 64 * 1024, hardLimitBytes: 512 * 1024, manifestReserveBytes: 64 * 1024, growthLowWaterBytes: 64 * 1024 }, systemClock);
    arena.grant(VOLUME, LANE, 64 * 1024);
    for (const u of units) arena.append(u, tokenOf(u.firstSeq));
    return arena.exportSegment(arena.seal(VOLUME, LANE).segmentId!);
  };
  const v1 = exported(() => undefined);
  t.is(v1[4], SEGMENT_FORMAT_VERSION);
  const { set } = await SpillSet.open(nodeFileLayer, `${dir}/spill.log`, systemClock);
  await set.append(VOLUME, LANE, 1, 5, v1);
  t.is((await set.flush(5_000)).kind, "synced");
  await set.close();
  t.deepEqual(decodeSegment(v1).attestations, [undefined, undefined, undefined]);
  // The version written now stores each unit's token beside it (here one token covers units 1 and 2-4).
  const token = attest(units.slice(0, 2));
  const v2 = exported((first) => (first <= 2 ? token : undefined));
  t.is(v2[4], SEGMENT_ATTESTED_VERSION);
  t.deepEqual(decodeSegment(v2).attestations, [token, token, undefined]);
  t.deepEqual(decodeSegment(v2).units, decodeSegment(v1).units);

  const keys = new KeyRing();
  const cfg = holderConfig("h-old", { incarnation: 2, residency: ["ram", "disk"], flush: { intervalMs: 20, deadlineMs: 2_000 } });
  const h = await launchHolder(url, keys, cfg, { files: nodeFileLayer, spillPath: `${dir}/spill.log`, writerKeys: writerKeys() });
  const reader = await transport(url, "reader");
  try {
    const lane = h.holder.lane(VOLUME, LANE)!;
    t.is(lane.retained.toString(), "1-5");
    t.is(lane.diskResident.toString(), "1-5");
    const named = new Map<number, string>();
    const served = await fetchUnits(reader, "h-old", VOLUME, LANE, RangeSet.of(1, 5), 5_000, { attestations: named });
    t.deepEqual(served.map((u) => [u.firstSeq, u.lastSeq]), [[1, 1], [2, 4], [5, 5]]);
    t.is(named.size, 0, "no attestation is named for a v1 record's units");
  } finally {
    await reader.close();
    await h.close();
  }
});

test.serial("coverage repair's copy reads the writer attestations a holder kept in its spill records through the fetch replies and offers them on, so a target that checks units admits the copy", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const src = await launchHolder(url, keys, holderConfig("h-src", { residency: ["ram", "disk"], flush: { intervalMs: 20, deadlineMs: 2_000 } }), { files: nodeFileLayer, spillPath: `${tempDir()}/spill.log`, writerKeys: writerKeys() });
  // The target serves the lane from another sender: it lacks everything until the copy.
  const tgt = await launchHolder(url, keys, holderConfig("h-tgt", { upstream: ["w9"] }), { writerKeys: writerKeys() });
  const wt = await transport(url, "writer-and-copier");
  const w = new Writer(wt, "h-src");
  const srcLane = () => src.holder.lane(VOLUME, LANE)!;
  const tgtLane = () => tgt.holder.lane(VOLUME, LANE)!;
  try {
    const UNITS = 48;
    for (let s = 1; s <= UNITS; s += 8) {
      const batch = Array.from({ length: 8 }, (_, i) => unit(s + i, 1, 4096));
      const token = attest(batch);
      for (const u of batch) w.sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u), attestation: token });
    }
    await eventually(() => srcLane().diskResident.covers(1, UNITS), `h-src spilled 1-${UNITS}`, 10_000);
    t.is(srcLane().arenaReport().ramBytes, 0, "every unit is read back from the spill stream");
    const outcome = await copyOverNats(wt, { copier: "ctl", volume: VOLUME, lane: LANE, target: "h-tgt", missing: RangeSet.of(1, UNITS), sources: [{ holderId: "h-src", retained: RangeSet.of(1, UNITS) }] });
    t.is(outcome.copied.toString(), `1-${UNITS}`);
    await eventually(() => tgtLane().retained.covers(1, UNITS), "the target admits the copy", 10_000, () => JSON.stringify(tgt.holder.counters.snapshot()));
    t.deepEqual(Object.entries(tgt.holder.counters.snapshot()).filter(([k]) => k.startsWith("transfer_unit_")), []);
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await src.close();
    await tgt.close();
  }
});
