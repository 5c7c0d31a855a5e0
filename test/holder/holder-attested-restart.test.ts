/**
 * A restarted holder passes the writer's attestations on, on a real process killed with SIGKILL:
 * writer → h1 (a `custody run holder` child process with a spill stream) → h2 (in this process),
 * both with the volume's writer key, so h2 admits only units a writer attestation lists. h1
 * spills what it forwarded; then h1 is SIGKILLed and h2 starts over empty (a new incarnation),
 * so only h1's resend from its spill stream can bring the units back to h2. Nothing else sends
 * anything: the writer is gone, and the controller only admits h2's new incarnation (key
 * continuity, as in every deployment: a sender believes credit grants of admitted incarnations
 * only) — it repairs nothing (no failure is declared, no holder is releasable).
 */
import anyTest, { type TestFn } from "ava";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startHolder, type Holder } from "../../actors/holder/holder.ts";
import { startController, type ControllerConfig } from "../../actors/index.ts";
import { LossKind } from "../../policies/index.ts";
import { unitRecordBytes } from "../../arena/segment.ts";
import { systemClock } from "../../core/clock.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { decodeReceiptBatch } from "../../custody/receipt-batch.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { signUnitAttestation } from "../../custody/unit-attestation.ts";
import { WriterKeyring } from "../../custody/unit-authenticator.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { receiptSubject } from "../../transport/protocol/subjects.ts";
import { decodeMessage, encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { DeployedProcess } from "../kit/deployed-process.ts";
import { bootstrapControlLog } from "../kit/index.ts";
import { CreditSender } from "../../actors/hop/index.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { e2eHolderConfig, site } from "../e2e/e2e-fixture.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, KeyRing, LANE, tempDir, unit, VOLUME } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const REGION = "attested-restart";
const UNITS = 40;
/** Generous bounds that only end a hung run; they measure nothing. */
const READY_MS = 60_000;
const WAIT_MS = 30_000;

test.serial("a SIGKILLed disk holder, restarted, resends its spilled units with the writer's attestations read back from its spill stream, and the downstream holder that checks them admits and receipts them without any repair or re-send", async (t) => {
  const url = t.context.nats.url;
  const dir = tempDir();
  const s1 = site("s-1", "us-east", "use1-az1");
  const s2 = site("s-2", "us-east", "use1-az2");
  const writerKey = generateHolderKeyPair();
  const writerKeys = () => new WriterKeyring().name(VOLUME, 1, writerKey.publicKey);
  const h1Key = generateHolderKeyPair();
  const h2Key = generateHolderKeyPair();

  // The operator's bootstrap admits h1#1 and h2#1, so each side verifies the other's receipts.
  const obs = await NatsTransport.connect({ servers: url, name: "observer" });
  t.teardown(() => obs.close());
  const { log } = await initJetStreamControlLog(obs.connection, { region: REGION });
  await bootstrapControlLog(log, [{ id: "h1", site: s1, publicKey: h1Key.publicKey }, { id: "h2", site: s2, publicKey: h2Key.publicKey }], { volume: VOLUME, lane: LANE });
  const controllerConfig: ControllerConfig = {
    controllerId: "ctl",
    region: REGION,
    evalIntervalMs: 200,
    admission: "key-continuity",
    topology: {
      volume: VOLUME,
      lanes: [LANE],
      writerSite: "s-1",
      sites: [s1, s2],
      holderSites: { h1: "s-1", h2: "s-2" },
      bases: [{ id: "genesis", holder: "h2", cut: { [LANE]: 0 }, bytes: 0 }],
      keyAuthorities: [{ id: "ka", site: "s-2" }],
      links: [],
      recovery: { destination: "s-2", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
      scenarios: [{ name: "crash:s-1", losses: [{ domain: `host:${s1.host}`, kind: LossKind.crash }], deadlineSec: 3600, required: true }],
      timelines: [],
      staleAfterMs: 5_000,
      releasable: [],
    },
  };
  const ct = await NatsTransport.connect({ servers: url, name: "ctl" });
  t.teardown(() => ct.close());
  const controller = await startController(controllerConfig, { transport: ct, clock: systemClock, store: log });
  t.teardown(() => controller.stop());

  // What h1 receipted at disk residency, and what h2's second incarnation receipted, as their receipts say.
  let h1OnDisk = RangeSet.EMPTY;
  let h2Again = RangeSet.EMPTY;
  obs.subscribe(receiptSubject(VOLUME, LANE), (m) => {
    const b = decodeReceiptBatch(decodeMessage(receiptBatchSpec, m.data).body);
    for (const r of b.receipts) {
      if (b.holder.holderId === "h1" && r.residency.kind === "disk") h1OnDisk = h1OnDisk.union(r.retained);
      if (b.holder.holderId === "h2" && b.holder.incarnation === 2) h2Again = h2Again.union(r.retained);
    }
  });

  const keyFile = join(dir, "h1.key");
  writeFileSync(keyFile, h1Key.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const h1Holder = {
    ...e2eHolderConfig("h1", s1, VOLUME, [{ lane: LANE, upstream: ["w1"], downstream: ["h2"] }], { resendAfterMs: 300, residency: ["ram", "disk"], flush: { intervalMs: 50, deadlineMs: 2_000 } }),
    incarnation: undefined,
  };
  const h1File = join(dir, "h1.json");
  const hex = Buffer.from(writerKey.publicKey).toString("hex");
  writeFileSync(h1File, JSON.stringify({ role: "holder", nats: { servers: url }, controlRegion: REGION, stateDir: join(dir, "h1"), keyFile, holder: h1Holder, writerKeys: [{ volume: VOLUME, fromTerm: 1, publicKey: hex }] }));

  const peers = new KeyRing();
  const h2Transport = await NatsTransport.connect({ servers: url, name: "h2" });
  t.teardown(() => h2Transport.close());
  const startH2 = (incarnation: number) =>
    startHolder(e2eHolderConfig("h2", s2, VOLUME, [{ lane: LANE, upstream: ["h1"] }], { incarnation }), { transport: h2Transport, clock: systemClock, privateKey: h2Key.privateKey, peers, writerKeys: writerKeys() });
  let h2: Holder = await startH2(1);
  const procs: DeployedProcess[] = [];
  t.teardown(async () => {
    for (const p of procs) if (p.running) await p.signal("SIGKILL", 10_000);
    await h2.stop().catch(() => undefined);
  });
  const explain = () => JSON.stringify({ h2: h2.counters.snapshot(), h1OnDisk: h1OnDisk.toString() }) + "\n" + procs.map((p) => p.log.slice(-3_000)).join("\n");
  const h2Lane = () => h2.lane(VOLUME, LANE)!;

  const first = DeployedProcess.role("h1", "holder", h1File);
  procs.push(first);
  const incarnation = (await first.ready(READY_MS))["incarnation"] as number;

  // The writer: attested units, four per attestation, within h1's credits.
  const wt = await NatsTransport.connect({ servers: url, name: "w1" });
  const w = new CreditSender({ transport: wt, clock: systemClock, sender: "w1", holder: "h1", volume: VOLUME, lane: LANE, retryMs: 20 }).attach();
  for (let s = 1; s <= UNITS; s += 4) {
    const batch = [0, 1, 2, 3].map((i) => unit(s + i, 1, 4096));
    const token = Buffer.from(signUnitAttestation(writerKey.privateKey, VOLUME, LANE, 1, batch.map((u) => ({ firstSeq: u.firstSeq, lastSeq: u.lastSeq, digest: u.digest })))).toString("base64");
    for (const u of batch) w.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u), attestation: token });
  }
  await eventually(() => h2Lane().retained.covers(1, UNITS), `h2 holds 1-${UNITS}, forwarded by h1`, WAIT_MS, explain);
  await eventually(() => h1OnDisk.covers(1, UNITS), `h1 receipted 1-${UNITS} at disk residency (spilled)`, WAIT_MS, explain);
  w.close();
  await wt.close();

  // h1 dies; h2 starts over empty, so what it held can come back only from h1's spill stream.
  t.is((await first.signal("SIGKILL", 10_000)).signal, "SIGKILL");
  await h2.stop();
  h2 = await startH2(2);
  t.true(h2Lane().retained.isEmpty);

  const again = DeployedProcess.role("h1", "holder", h1File);
  procs.push(again);
  t.is((await again.ready(READY_MS))["incarnation"], incarnation + 1, "h1 came back as a new incarnation on the same spill stream");
  await eventually(() => h2Lane().retained.covers(1, UNITS), `h2#2 admits 1-${UNITS} from h1#2's resend`, WAIT_MS, explain);
  t.is(h2.counters.get("unit_unsigned"), 0, "no resent unit came without the writer's attestation");
  t.is(h2.counters.get("unit_not_attested") + h2.counters.get("unit_bad_signature"), 0);
  await eventually(() => h2Again.covers(1, UNITS), `h2#2 receipts 1-${UNITS}`, WAIT_MS, explain);
});
