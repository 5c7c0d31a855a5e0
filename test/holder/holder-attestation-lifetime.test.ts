/**
 * A unit's writer attestation lives as long as the unit is held, on a real nats-server: two
 * holders that both check units against the volume's writer key, h1 → h2. What h2 admits must be
 * listed by a writer attestation, so every unit h1 sends on shows whether h1 still had its token.
 */
import anyTest, { type TestFn } from "ava";
import type { Holder } from "../../actors/holder/holder.ts";
import { fetchUnits } from "../../actors/repair/custody-reader.ts";
import { unitRecordBytes } from "../../arena/segment.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { attests, readUnitAttestation, signUnitAttestation, verifyUnitAttestation } from "../../custody/unit-attestation.ts";
import { WriterKeyring } from "../../custody/unit-authenticator.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { TransportUnit } from "../../lanes/transport-unit.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { SimPreservedRam } from "../../sim/preserved-ram.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, goodEvidence, holderConfig, KeyRing, LANE, launchHolder, settle, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const writerKey = generateHolderKeyPair();
/** What the key authority names: the writer key of vol1 from term 1 on. */
const writerKeys = () => new WriterKeyring().name(VOLUME, 1, writerKey.publicKey);
/** Units per writer attestation (the writer signs per batch). */
const PER_TOKEN = 32;
/** Generous bounds that only end a hung run; they measure nothing. */
const WAIT_MS = 60_000;

/** Sends `count` small units from sequence 1, one writer attestation per PER_TOKEN units. */
function sendAttested(w: Writer, count: number, bytes: number): void {
  for (let s = 1; s <= count; s += PER_TOKEN) {
    const batch: TransportUnit[] = [];
    for (let q = s; q < s + PER_TOKEN && q <= count; q++) batch.push(unit(q, 1, bytes));
    const token = Buffer.from(signUnitAttestation(writerKey.privateKey, VOLUME, LANE, 1, batch.map((u) => ({ firstSeq: u.firstSeq, lastSeq: u.lastSeq, digest: u.digest })))).toString("base64");
    for (const u of batch) w.sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u), attestation: token });
  }
}

const lane = (h: { holder: Pick<Holder, "lane"> }) => h.holder.lane(VOLUME, LANE)!;

// Bug: the holder kept each unit's attestation in a side map bounded at 65,536 units per lane; the
// oldest RAM units' tokens fell out of it, so a resend sent them unattested and a checking
// downstream holder refused them (unit_unsigned) although the writer had signed them.
test.serial("regression: a holder that admitted more than 65,536 units resends the oldest of them from RAM with the writer's attestation, and a downstream holder that checks units admits them all", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const UNITS = 65_536 + 2 * PER_TOKEN;
  // 16-byte payloads keep ~65k units to a few MiB of arena.
  const arena = { segmentBytes: 256 * 1024, limitBytes: 16 * 1024 * 1024, maxOutstandingCredit: 512 * 1024, maxUnitBytes: 32 * 1024 };
  const h2Config = (incarnation: number) => holderConfig("h2", { incarnation, upstream: ["h1"], arena });
  let h2 = await launchHolder(url, keys, h2Config(1), { writerKeys: writerKeys() });
  const h1 = await launchHolder(url, keys, holderConfig("h1", { downstream: ["h2"], arena, resendAfterMs: 300 }), { writerKeys: writerKeys() });
  const wt = await transport(url, "w1");
  const w = new Writer(wt, "h1");
  const explain = () => JSON.stringify({ h1: h1.holder.counters.snapshot(), h2: h2.holder.counters.snapshot(), h2Retained: lane(h2).retained.toString() });
  try {
    sendAttested(w, UNITS, 16);
    await eventually(() => lane(h2).retained.covers(1, UNITS), `h2 holds 1-${UNITS}, forwarded by h1`, WAIT_MS, explain);
    t.is(h1.holder.counters.get("unit_unsigned"), 0);

    // h2 starts over empty (a new incarnation): only h1's resend from its RAM can bring the units back,
    // and h1 has admitted more units than the old side map kept tokens for.
    await h2.close();
    keys.add("h2", 2);
    h2 = await launchHolder(url, keys, h2Config(2), { writerKeys: writerKeys() });
    t.true(lane(h2).retained.isEmpty);
    await eventually(() => lane(h2).retained.covers(1, UNITS), `h2#2 admits 1-${UNITS} from h1's resend`, WAIT_MS, explain);
    t.is(h2.holder.counters.get("unit_unsigned"), 0, "no resent unit, the oldest included, came without the writer's attestation");
    t.is(h2.holder.counters.get("unit_not_attested") + h2.holder.counters.get("unit_bad_signature"), 0);
    t.true(h1.holder.counters.get("retransmit") >= UNITS, "the units came back by h1's resend");
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await h1.close();
    await h2.close();
  }
});

// Bug: the protected-RAM region kept only the units, so a holder restarted from it re-admitted them
// without their writer attestations; what it then sent or served was refused by any checking holder.
test.serial("regression: a protected-RAM holder restarted from its preserved memory serves and sends the preserved units with the writer's attestations, and a downstream holder that checks units admits them", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const UNITS = 4 * PER_TOKEN + 5;
  const preserved = new SimPreservedRam();
  const h1Config = (incarnation: number) =>
    holderConfig("h1", { incarnation, downstream: ["h2"], resendAfterMs: 300, residency: ["ram", "protected_ram"], protectedRam: { evidence: goodEvidence(), maxEvidenceAgeMs: 60_000, minBatteryHealth: 0.8 } });
  // h2 is not up yet: nothing h1 admits leaves it before it goes down.
  let h1 = await launchHolder(url, keys, h1Config(1), { writerKeys: writerKeys(), preserved });
  const wt = await transport(url, "w1");
  const w = new Writer(wt, "h1");
  let h2: Awaited<ReturnType<typeof launchHolder>> | undefined;
  const explain = () => JSON.stringify({ h1: h1.holder.counters.snapshot(), h2: h2?.holder.counters.snapshot(), preserved: preserved.held.toString() });
  try {
    sendAttested(w, UNITS, 512);
    await eventually(() => lane(h1).retained.covers(1, UNITS) && preserved.held.covers(1, UNITS), `h1 holds and preserved 1-${UNITS}`, WAIT_MS, explain);
    w.sender.close();

    // h1 goes down with its preservation path intact and comes back as a new incarnation from the region.
    await h1.close();
    preserved.crash(true);
    keys.add("h1", 2);
    h1 = await launchHolder(url, keys, h1Config(2), { writerKeys: writerKeys(), preserved });
    t.true(lane(h1).retained.covers(1, UNITS), "the restarted holder re-admitted the preserved units");
    t.is(h1.holder.counters.get("restart_preserved_units"), UNITS);

    // Served: a fetch reply names, for every preserved unit, a writer attestation that lists it.
    const reader = await transport(url, "reader");
    const tokens = new Map<number, string>();
    const fetched = await fetchUnits(reader, "h1", VOLUME, LANE, RangeSet.of(1, UNITS), 10_000, { attestations: tokens });
    await reader.close();
    t.is(fetched.length, UNITS);
    const listed = fetched.filter((u) => {
      const token = tokens.get(u.firstSeq);
      if (token === undefined) return false;
      const a = readUnitAttestation(new Uint8Array(Buffer.from(token, "base64")));
      return verifyUnitAttestation(publicKeyFromRaw(writerKey.publicKey), a) && attests(a, u);
    });
    t.is(listed.length, UNITS, "every served unit comes with a valid writer attestation listing it");

    // Sent: h2, which checks units, takes them from the restarted h1.
    h2 = await launchHolder(url, keys, holderConfig("h2", { upstream: ["h1"] }), { writerKeys: writerKeys() });
    await eventually(() => lane(h2!).retained.covers(1, UNITS), `h2 admits 1-${UNITS} from the restarted h1`, WAIT_MS, explain);
    t.is(h2.holder.counters.get("unit_unsigned"), 0, "no unit came without the writer's attestation");
    t.is(h2.holder.counters.get("unit_not_attested") + h2.holder.counters.get("unit_bad_signature"), 0);
  } finally {
    w.sender.close();
    await wt.close();
    await settle(50);
    await h1.close();
    await h2?.close();
  }
});
