/**
 * A failover on a real deployment (supercluster, JetStream control log) commits the recovered cut
 * and its relation to the old head: which old-term sequences are abandoned and where the new term
 * starts, before the new term's obligation.
 */
import anyTest, { type TestFn } from "ava";
import { commitFailover } from "../../actors/controller/failover.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { withSupercluster, type SuperclusterTestContext } from "../helpers/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE } from "./deployment.ts";
import { blockData, eventually } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

test.serial("a failover commits the recovered cut, the old head above it and the new term's first sequence to the control log; a term that does not advance is refused", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-fo", "use-fo");
  t.context.defer(() => d.stop());
  for (let i = 0; i < 12; i++) await d.writer.write((i * 5) % BLOCKS, blockData(100 + i));
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  await eventually(() => d.controller.holdings({ volume: d.volume, lane: LANE, holderId: "h-w" }).some((h) => h.retained.has(head)), "controller has the receipts", 5000);

  const plan = await d.controller.failover([LANE], 2, { [LANE]: head - 4 });
  t.deepEqual(plan.oldHead, { [LANE]: head });
  t.deepEqual(plan.firstSeq, { [LANE]: head + 1 });
  const log = await (await openJetStreamControlLog(d.writer.transport.connection, { region: "use-fo" })).readAll();
  const fo = log.find((e) => e.seq === plan.failoverSeq[LANE])!;
  t.like(fo.event, { type: "commit_failover", volume: d.volume, lane: LANE, term: 2, recoveredCut: head - 4, oldHead: head, firstSeq: head + 1 });
  t.true(fo.seq < plan.controlSeq[LANE]!, "recorded before the new term's obligation");
  t.like(d.controller.controlState().failovers?.[`${d.volume}/${LANE}`], { term: 2, recoveredCut: head - 4, oldHead: head });

  const again = await d.controller.failover([LANE], 2, { [LANE]: head }).catch((e: { code?: string }) => e);
  t.is((again as { code?: string }).code, "failover_order");
});
