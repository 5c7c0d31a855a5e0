/**
 * A holder process that is asked to stop (SIGTERM → `stop()` of `runHolder`) drains first: it
 * grants no more credit, a persisting holder flushes what only RAM holds before it goes, and what
 * it could neither flush nor see released by the deadline is named. Real nats-server with
 * JetStream, real spill files.
 */
import anyTest, { type TestFn } from "ava";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { runHolder } from "../../actors/runtime/run-holder.ts";
import { ramOnlyCustody } from "../../actors/runtime/holder-drain.ts";
import { holderRoleSchema } from "../../actors/runtime/role-config.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { eventually, holderConfig, LANE, tempDir, transport, unit, VOLUME, Writer } from "../holder/holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

async function holderProcess(t: { context: NatsTestContext }, id: string, region: string, disk: boolean, dir: string, flushIntervalMs = 50) {
  const kp = generateHolderKeyPair();
  const keyFile = join(dir, `${id}.key`);
  writeFileSync(keyFile, kp.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const holder = { ...holderConfig(id, { upstream: ["w1"] }), incarnation: undefined, ...(disk ? { residency: ["ram", "disk"], flush: { intervalMs: flushIntervalMs, deadlineMs: 2_000 } } : {}) };
  const cfg = holderRoleSchema.parse({ role: "holder", nats: { servers: t.context.nats.url }, controlRegion: region, stateDir: join(dir, id), keyFile, holder, drainDeadlineMs: 1_500 });
  return runHolder(cfg);
}

test("a stopping disk holder flushes what only RAM held and leaves nothing behind; its next incarnation has it all", async (t) => {
  const dir = tempDir();
  const ct = await transport(t.context.nats.url, "drain-ctl");
  t.context.defer(() => ct.close());
  await initJetStreamControlLog(ct.connection, { region: "drain-a" });
  // A slow flush timer: when the stop comes, what it holds is still in RAM only.
  const h = await holderProcess(t, "hd", "drain-a", true, dir, 400);
  const w = new Writer(await transport(t.context.nats.url, "drain-w"), "hd");
  for (let s = 1; s <= 20; s++) w.send(unit(s));
  const lane = () => h.holder.lane(VOLUME, LANE)!;
  await eventually(() => lane().retained.covers(1, 20), "hd retains 1..20");
  t.true(Object.keys(ramOnlyCustody(h.holder)).length > 0, "precondition: part of it is held only in RAM at the stop");
  const left = await h.stop();
  t.deepEqual(Object.keys(left), [], "nothing was left only in RAM");
  const again = await holderProcess(t, "hd", "drain-a", true, dir);
  t.context.defer(() => again.stop().then(() => undefined));
  await eventually(() => again.holder.lane(VOLUME, LANE)!.retained.covers(1, 20), "the next incarnation retains 1..20 from its spill stream");
  t.true(again.holder.incarnation > h.holder.incarnation);
  w.sender.close();
  await w.t.close();
});

test("a stopping RAM holder stops granting credit and names, at its deadline, the ranges it held only in RAM", async (t) => {
  const dir = tempDir();
  const ct = await transport(t.context.nats.url, "drain-ctl-b");
  t.context.defer(() => ct.close());
  await initJetStreamControlLog(ct.connection, { region: "drain-b" });
  const h = await holderProcess(t, "hr", "drain-b", false, dir);
  const w = new Writer(await transport(t.context.nats.url, "drain-wb"), "hr");
  for (let s = 1; s <= 10; s++) w.send(unit(s));
  const lane = () => h.holder.lane(VOLUME, LANE)!;
  await eventually(() => lane().retained.covers(1, 10), "hr retains 1..10");
  const left = await h.stop();
  t.deepEqual(Object.keys(left), [`${VOLUME}/${LANE}`]);
  t.true(left[`${VOLUME}/${LANE}`]!.equals(RangeSet.of(1, 10)), `left ${left[`${VOLUME}/${LANE}`]?.toString()}`);
  t.is(h.holder.state(), "retired", "its actor ended");
  w.sender.close();
  await w.t.close();
});
