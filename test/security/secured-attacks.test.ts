import anyTest, { type TestFn } from "ava";
import { AckPolicy, DeliverPolicy, jetstreamManager } from "@nats-io/jetstream";
import { releaseFrontierSpec } from "../../transport/protocol/wire/holder-messages.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";
import { makeReceipt } from "../../custody/receipt.ts";
import { makeReceiptBatch, signReceiptBatch } from "../../custody/receipt-batch.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { makeTransportUnit } from "../../lanes/transport-unit.ts";
import { controlStreamName } from "../../transport/jetstream-control-log.ts";
import { creditSubject, ctrlSubject, failoverSubject, receiptSubject, releaseSubject, unitSubject } from "../../transport/protocol/subjects.ts";
import { requestFailover } from "../../actors/controller/failover-client.ts";
import { failoverRequestSpec } from "../../transport/protocol/wire/failover-messages.ts";
import { SENDER_HEADER, SENT_THROUGH_HEADER, SESSION_HEADER } from "../../transport/unit-frames.ts";
import { creditSpec, encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { blockData } from "../e2e/e2e-fixture.ts";
import { eventually } from "../holder/holder-fixture.ts";
import { AZ_CONTRACT, BLOCKS, deploySecured, LANE, REGION, VOL, type SecuredDeployment } from "./secured-deployment.ts";

const test = anyTest as TestFn<{ d: SecuredDeployment; head: number }>;

test.before(async (t) => {
  const d = await deploySecured();
  t.context.d = d;
  for (let i = 0; i < 8; i++) await d.writer.write(i % BLOCKS, blockData(i));
  t.context.head = (await d.writer.sync(AZ_CONTRACT.name, 15_000)).heads[LANE]!;
});
test.after.always(async (t) => {
  await t.context.d?.stop();
});

const laneOf = (d: SecuredDeployment, h: string) => d.holders.get(h)!.lane(VOL, LANE)!;

/** Waits until the server has refused `subject` to principal `key` (`operation` publish or subscription). */
async function refused(d: SecuredDeployment, key: string, subject: string, operation: "publish" | "subscription" = "publish"): Promise<void> {
  const c = d.conns.get(key)!;
  await c.transport.flush().catch(() => undefined);
  await eventually(() => c.violations.some((v) => v.subject === subject && v.operation === operation), `the server refused ${operation} on ${subject} to ${key}`, 5000, () => JSON.stringify(c.violations));
}

/** The holders keep serving: a new write is receipted by both first hops and forwarded to h3. */
async function stillServing(t: { true(v: boolean, m?: string): void }, d: SecuredDeployment): Promise<void> {
  await d.writer.write(0, blockData(999));
  const head = (await d.writer.sync(AZ_CONTRACT.name, 15_000)).heads[LANE]!;
  t.true(d.writer.protectedThrough(AZ_CONTRACT.name, LANE) >= head, "the writer's next write is protected");
  await eventually(() => laneOf(d, "h3").retained.has(head), "h3 still receives forwarded units", 10_000);
}

test.serial("a holder's credentials cannot publish a release frontier, not even its own: the server refuses it and the target releases nothing", async (t) => {
  const d = t.context.d;
  const before = laneOf(d, "h2").released;
  const frontier = encodeMessage(releaseFrontierSpec, { holder: "h2", volume: VOL, lane: LANE, ranges: [[1, t.context.head]], epoch: 1, controlSeq: 1 });
  d.conns.get("h3")!.transport.publish(releaseSubject("h2"), frontier);
  d.conns.get("h2")!.transport.publish(releaseSubject("h2"), frontier);
  await refused(d, "h3", releaseSubject("h2"));
  await refused(d, "h2", releaseSubject("h2"));
  t.true(laneOf(d, "h2").released.equals(before) && before.isEmpty, "h2 released nothing");
  t.true(laneOf(d, "h2").retained.coversAll(RangeSet.of(1, t.context.head)));
  await stillServing(t, d);
});

test.serial("a non-writer cannot publish units for the volume, whatever Custody-Sender header it sets: holders, controller and operator are refused and the target holds nothing new", async (t) => {
  const d = t.context.d;
  // h2 is a first hop that never releases, so anything it retains stays visible.
  const h2 = laneOf(d, "h2");
  const retained = h2.retained;
  const forged = makeTransportUnit({ volume: VOL, lane: LANE, term: 1, firstSeq: 10_001, lastSeq: 10_005, commitTs: [1, 2, 3, 4, 5], payload: new Uint8Array(64) });
  const data = encodeMessage(unitSpec, forged);
  const headers = { [SENDER_HEADER]: "w1", [SESSION_HEADER]: "1", [SENT_THROUGH_HEADER]: "999999" };
  const subject = unitSubject("h2", VOL, LANE);
  const attackers = ["h1", "h3", "c1", "op"];
  for (const key of attackers) d.conns.get(key)!.transport.publish(subject, data, { headers });
  for (const key of attackers) await refused(d, key, subject);
  t.false(h2.retained.has(10_001), "h2 never admitted the injected sequences");
  t.true(h2.retained.coversAll(retained));
  await stillServing(t, d);
});

test.serial("a holder cannot grant credit as another holder: a credit on h1's subject from h2 is refused", async (t) => {
  const d = t.context.d;
  const subject = creditSubject("h1", VOL, LANE);
  d.conns.get("h2")!.transport.publish(subject, encodeMessage(creditSpec, { holder: "h1", sender: "w1", volume: VOL, lane: LANE, incarnation: 1, session: 1, window: 99, grantedThrough: 1 << 30, grantSeq: 1 }));
  await refused(d, "h2", subject);
  t.pass();
});

test.serial("a holder's credentials cannot receipt a lane it does not serve, and a receipt it signs in another holder's name is rejected by signature and counted: the writer's protection and the controller's ledger are unchanged", async (t) => {
  const d = t.context.d;
  const h3 = d.conns.get("h3")!;
  const other = receiptSubject(VOL, "l9");
  h3.transport.publish(other, new Uint8Array([0x80]));
  await refused(d, "h3", other);
  const subject = receiptSubject(VOL, LANE);
  const receipt = makeReceipt({
    holder: { holderId: "h2", incarnation: 1 },
    volume: VOL,
    lane: LANE,
    issuedAt: Date.now(),
    writerTerm: 1,
    topologyEpoch: 1,
    policyGeneration: 1,
    prefixBase: 1,
    payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
    obligation: { obligationId: `${VOL}-${LANE}`, releaseAuthority: { kind: "control_log", region: REGION } },
    extensions: [],
    receiptSeq: 999_999,
    retained: RangeSet.of(1, 50_000),
    residency: { kind: "ram", capabilityGeneration: 0, observedAt: Date.now() },
  });
  const batch = makeReceiptBatch({ volume: VOL, lane: LANE, subject }, { holderId: "h2", incarnation: 1 }, Date.now(), [receipt]);
  const forged = signReceiptBatch(batch, d.keys.privateKey("h3")); // h3 signs in h2's name
  const wBad = d.writer.counters.get("receipt_bad_signature") ?? 0;
  const cBad = d.controller.counters.get("receipt_bad_signature") ?? 0;
  h3.transport.publish(subject, encodeMessage(receiptBatchSpec, { body: forged.body, signature: forged.signature }));
  await eventually(() => (d.writer.counters.get("receipt_bad_signature") ?? 0) > wBad && (d.controller.counters.get("receipt_bad_signature") ?? 0) > cBad, "writer and controller both rejected the forgery", 5000);
  const h2Held = d.controller.holdings({ holderId: "h2" }).reduce((a, h) => a.union(h.retained), RangeSet.EMPTY);
  t.false(h2Held.has(50_000), "the forged claim never entered the ledger");
  t.true(d.writer.protectedThrough(AZ_CONTRACT.name, LANE) < 50_000);
});

test.serial("only the controller appends to the control stream: holders, the writer and the operator are refused on its subject, nobody but the operator may manage streams, and the log holds only the controller's entries, whole", async (t) => {
  const d = t.context.d;
  const before = await d.store.lastSeq();
  const subject = ctrlSubject(REGION);
  const junk = new TextEncoder().encode("garbage");
  for (const key of ["h1", "w1", "op"]) d.conns.get(key)!.transport.publish(subject, junk);
  for (const key of ["h1", "w1", "op"]) await refused(d, key, subject);
  const stream = controlStreamName(REGION);
  const jsm = await jetstreamManager(d.conns.get("h1")!.transport.connection, { timeout: 2000 });
  await t.throwsAsync(jsm.streams.delete(stream), undefined, "a holder cannot delete the control stream");
  await t.throwsAsync(jsm.streams.purge(stream), undefined, "nor purge it");
  await refused(d, "h1", `$JS.API.STREAM.DELETE.${stream}`);
  // The controller goes on committing (releases of h1) meanwhile: what must hold is that nothing
  // was removed, every entry is the controller's, and the chain still replays from the start.
  const replay = await new ControlLogFollower(d.store).replay();
  t.true(replay.lastSeq >= before, "nothing was removed");
  const entries = await d.store.readAll();
  t.deepEqual([...new Set(entries.map((e) => e.event.controller))], ["c1"], "every entry was appended by the controller");
  await stillServing(t, d);
});

test.serial("a principal cannot answer into another principal's inbox nor listen to it, nor subscribe to another holder's units", async (t) => {
  const d = t.context.d;
  const h3 = d.conns.get("h3")!;
  h3.transport.publish("_INBOX.controller.c1.x", new Uint8Array(1));
  await refused(d, "h3", "_INBOX.controller.c1.x");
  h3.transport.subscribe("_INBOX.>", () => undefined);
  await refused(d, "h3", "_INBOX.>", "subscription");
  h3.transport.subscribe(unitSubject("h1", VOL, LANE), () => undefined);
  await refused(d, "h3", unitSubject("h1", VOL, LANE), "subscription");
  t.pass();
});

test.serial("a reader cannot create a consumer at all (no push consumer onto another's subject, whatever its deliver subject): the server refuses the API request, no consumer exists, and the target releases nothing", async (t) => {
  const d = t.context.d;
  const before = laneOf(d, "h2").released;
  const stream = controlStreamName(REGION);
  const jsm = await jetstreamManager(d.conns.get("h3")!.transport.connection, { timeout: 2000 });
  // The deliver subject is in the request body, out of reach of subject permissions: the create itself is refused.
  await t.throwsAsync(jsm.consumers.add(stream, { name: "evil", deliver_subject: releaseSubject("h2"), ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All }));
  await t.throwsAsync(jsm.consumers.add(stream, { durable_name: "evil2", deliver_subject: unitSubject("h2", VOL, LANE), ack_policy: AckPolicy.Explicit, ack_wait: 100_000_000 }));
  await refused(d, "h3", `$JS.API.CONSUMER.CREATE.${stream}.evil`);
  const opJsm = await jetstreamManager(d.conns.get("op")!.transport.connection, { timeout: 2000 });
  const names: string[] = [];
  for await (const c of opJsm.consumers.list(stream)) names.push(c.name);
  t.deepEqual(names, [], "no consumer on the control stream");
  t.true(laneOf(d, "h2").released.equals(before) && before.isEmpty, "h2 released nothing");
  await stillServing(t, d);
});

test.serial("only the volume's writer and the operator reach the controller with a failover request: a holder's is refused by the server and never answered or counted; the writer's and operator's bad requests are answered with the controller's code; nothing is committed", async (t) => {
  const d = t.context.d;
  const subject = failoverSubject(VOL);
  const answered = () => Object.entries(d.controller.counters.snapshot()).filter(([k]) => k.startsWith("failover_request_")).reduce((a, [, n]) => a + Number(n), 0);
  d.conns.get("h3")!.transport.publish(subject, encodeMessage(failoverRequestSpec, { volume: VOL, lanes: [LANE], term: 2, recoveredCut: { [LANE]: 1 } }));
  await refused(d, "h3", subject);
  t.is(answered(), 0, "the controller never saw the holder's request");
  for (const key of ["w1", "op"]) {
    const err = await t.throwsAsync(requestFailover(d.conns.get(key)!.transport, VOL, { lanes: ["l9"], term: 2, recoveredCut: {} }, { timeoutMs: 5000 }));
    t.is((err as unknown as { code: string }).code, "failover_request_refused", `${key} was answered`);
  }
  t.is(d.controller.counters.get("failover_request_refused"), 2);
  t.is(d.controller.controlState().failovers, undefined, "no failover was committed");
  for (const key of ["w1", "op"]) t.false(d.conns.get(key)!.violations.some((v) => v.subject === subject), `${key} may ask`);
});
