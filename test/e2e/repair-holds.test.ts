/**
 * A repair's reads are registered in the control log on a real multi-region deployment: the
 * controller holds what the repair copies from survivors (a `recovery` hold binding every holder)
 * from before the copy until it is done, so no release — by this controller, another one, or this
 * one after a restart — takes what the repair is reading.
 */
import anyTest, { type TestFn } from "ava";
import { RangeSet } from "../../lanes/range-set.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE } from "./deployment.ts";
import { blockData, eventually } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

test.serial("a repair holds what it reads in the control log from before its copy until it is done, and no release of those ranges lands in between", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-rep-hold", "use-rep-hold", { releasable: ["h-e2"], repair: { standby: [{ holderId: "h-e3", site: "s-e3" }], bandwidthBytesPerSec: 125_000_000 } });
  t.context.defer(() => d.stop());
  for (let i = 0; i < 40; i++) await d.writer.write((i * 13) % BLOCKS, blockData(7000 + i));
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  await eventually(() => (d.controller.status()?.acknowledged[0]?.[1] ?? 0) >= head, "controller saw the writes", 5000);
  // What the repair reads is what h-e1's receipts showed; under load the writer's sync can return
  // before h-e1 receipted the last writes, so wait for its receipts through the head first.
  const heldByE1 = () => d.controller.holdings({ holderId: "h-e1" }).reduce((a, h) => a.union(h.retained), RangeSet.EMPTY);
  await eventually(() => heldByE1().coversAll(RangeSet.of(1, head)), "h-e1 receipted every write", 10_000, () => `h-e1 ${heldByE1()}`);
  await d.kill("h-e1");
  const { seq: failureSeq } = await d.declareFailure({ holder: "h-e1" });
  await eventually(() => d.controller.repairs().some((r) => r.failureSeq === failureSeq && r.state === "done"), "the repair finished", 20_000, () => JSON.stringify(d.controller.repairs()));

  const log = await (await openJetStreamControlLog(d.writer.transport.connection, { region: "use-rep-hold" })).readAll();
  const holdId = `repair-${d.volume}-${failureSeq}-${LANE}`;
  const placed = log.find((e) => e.event.type === "hold_ranges" && e.event.holdId === holdId);
  t.truthy(placed, "the repair registered its read");
  const hold = placed!.event.type === "hold_ranges" ? placed!.event : undefined;
  t.is(hold!.kind, "recovery");
  t.deepEqual(hold!.holders, [], "it binds every holder: the copy may read from any survivor");
  t.true(hold!.ranges.coversAll(RangeSet.of(1, head)), `held ${hold!.ranges}`);
  const activated = log.find((e) => e.event.type === "activate_replacement")!;
  const ended = log.find((e) => e.event.type === "end_hold" && e.event.holdId === holdId);
  t.truthy(ended, "the hold ended when the repair was done");
  t.true(placed!.seq < activated.seq && activated.seq < ended!.seq, "placed before the copy, ended after the replacement took over");
  const during = log.filter((e) => e.seq > placed!.seq && e.seq < ended!.seq && (e.event.type === "release_ranges" || e.event.type === "release_to_base") && e.event.ranges.intersects(hold!.ranges));
  t.deepEqual(during.map((e) => e.seq), [], "no release of what the repair read while it read");
  t.deepEqual(Object.keys(d.controller.controlState().holds), []);
});
