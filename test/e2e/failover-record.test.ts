/**
 * A failover on a real deployment (supercluster, JetStream control log), asked of the controller
 * over NATS (`custody.v1.failover.<volume>`) as a new writer or the operator does: it commits the
 * recovered cut and its relation to the old head (which old-term sequences are abandoned and where
 * the new term starts) before the new term's obligation. Bad requests are refused, counted and
 * commit nothing; the same request again answers the committed plan; `custody failover` asks the
 * running controller from the command line.
 */
import anyTest, { type TestFn } from "ava";
import { requestFailover } from "../../actors/controller/failover-client.ts";
import { decodeMessage, encodeMessage, failoverAnswerSpec } from "../../transport/protocol/index.ts";
import { failoverSubject } from "../../transport/protocol/subjects.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { custodyCli, type CustodyCliFailure } from "../kit/custody-cli.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE, type Deployment } from "./deployment.ts";
import { blockData, eventually } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

/** A deployment whose controller has the receipts of the writer's head; resolves with that head. */
async function written(d: Deployment): Promise<number> {
  for (let i = 0; i < 12; i++) await d.writer.write((i * 5) % BLOCKS, blockData(100 + i));
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  await eventually(() => d.controller.holdings({ volume: d.volume, lane: LANE, holderId: "h-w" }).some((h) => h.retained.has(head)), "controller has the receipts", 5000);
  return head;
}

test.serial("a failover commits the recovered cut, the old head above it and the new term's first sequence to the control log; a term that does not advance is refused", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-fo", "use-fo");
  t.context.defer(() => d.stop());
  const head = await written(d);

  const plan = await requestFailover(d.writer.transport, d.volume, { lanes: [LANE], term: 2, recoveredCut: { [LANE]: head - 4 } });
  t.deepEqual(plan.oldHead, { [LANE]: head });
  t.deepEqual(plan.firstSeq, { [LANE]: head + 1 });
  const log = await (await openJetStreamControlLog(d.writer.transport.connection, { region: "use-fo" })).readAll();
  const fo = log.find((e) => e.seq === plan.failoverSeq[LANE])!;
  t.like(fo.event, { type: "commit_failover", volume: d.volume, lane: LANE, term: 2, recoveredCut: head - 4, oldHead: head, firstSeq: head + 1 });
  t.true(fo.seq < plan.controlSeq[LANE]!, "recorded before the new term's obligation");
  t.like(d.controller.controlState().failovers?.[`${d.volume}/${LANE}`], { term: 2, recoveredCut: head - 4, oldHead: head });

  const again = await requestFailover(d.writer.transport, d.volume, { lanes: [LANE], term: 2, recoveredCut: { [LANE]: head } }).catch((e: { code?: string }) => e);
  t.is((again as { code?: string }).code, "failover_order");
});

test.serial("a bad request (another volume's lane, a cut above every receipt, garbage, a stale term) is refused with its code, counted and commits nothing; the same request again answers the committed plan; custody failover asks the running controller", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-fo2", "use-fo2");
  t.context.defer(() => d.stop());
  const head = await written(d);
  const store = await openJetStreamControlLog(d.writer.transport.connection, { region: "use-fo2" });
  t.context.defer(() => store.close());
  const lastSeq = await store.lastSeq();
  // What a failover request commits: its record and the new term's obligation. The controller's
  // other work (releases of what the holders receipted, persistence choices) may commit meanwhile,
  // so "committed nothing" is checked on these kinds, not on the log's last sequence.
  const failoverCommitsAfter = async (seq: number) =>
    (await store.readAll()).filter((e) => e.seq > seq && (e.event.type === "commit_failover" || e.event.type === "create_obligation")).map((e) => e.seq);
  const count = (c: string) => d.controller.counters.get(`failover_request_${c}`) ?? 0;
  const refusal = async (req: Parameters<typeof requestFailover>[2]) => (await t.throwsAsync(requestFailover(d.writer.transport, d.volume, req))) as unknown as { code: string; message: string };

  t.like(await refusal({ lanes: ["l9"], term: 2, recoveredCut: { l9: 1 } }), { code: "failover_request_refused" });
  t.regex((await refusal({ lanes: [LANE], term: 2, recoveredCut: { [LANE]: head + 5 } })).message, /above .*highest sequence any holder receipted/);
  t.regex((await refusal({ lanes: [LANE], term: 2, recoveredCut: { l9: 1 } })).message, /a cut for lane l9, which is not failed over/);
  const garbage = decodeMessage(failoverAnswerSpec, (await d.writer.transport.request(failoverSubject(d.volume), encodeMessage(failoverAnswerSpec, { ok: true }), { timeoutMs: 5000 })).data);
  t.like(garbage, { ok: false, code: "wrong_kind" });
  t.is(count("refused"), 3);
  t.is(count("wrong_kind"), 1);
  t.deepEqual(await failoverCommitsAfter(lastSeq), [], "no refused request committed anything");
  t.is(d.controller.controlState().failovers, undefined);

  // The operator's command line, against the running controller.
  const cli = async (term: number, cut: number) => JSON.parse((await custodyCli(["failover", "--server", d.urls["us-east"]!, "--volume", d.volume, "--term", String(term), "--cut", `${LANE}=${cut}`])).stdout) as Awaited<ReturnType<typeof requestFailover>>;
  const plan = await cli(3, head - 2);
  t.like(plan, { term: 3, recoveredCut: { [LANE]: head - 2 }, oldHead: { [LANE]: head }, firstSeq: { [LANE]: head + 1 } });
  const log = await store.readAll();
  t.like(log.find((e) => e.seq === plan.failoverSeq[LANE])?.event, { type: "commit_failover", term: 3, recoveredCut: head - 2, firstSeq: head + 1 });
  t.like(log.find((e) => e.seq === plan.controlSeq[LANE])?.event, { type: "create_obligation", obligationId: `${d.volume}-${LANE}-term3`, fromSeq: head + 1 });
  const committed = await store.lastSeq();

  // Its reply lost, the operator asks again: the same plan, nothing committed twice.
  t.deepEqual(await cli(3, head - 2), plan);
  t.deepEqual(await requestFailover(d.writer.transport, d.volume, { lanes: [LANE], term: 3, recoveredCut: { [LANE]: head - 2 } }), plan);
  t.deepEqual(await failoverCommitsAfter(committed), []);

  // A term that does not advance: the fold's own refusal, answered before anything is committed.
  const stale = (await t.throwsAsync(cli(2, head - 2))) as unknown as CustodyCliFailure;
  t.regex(stale.stderr, /error \[failover_order\]: .*term does not advance past 3/);
  t.like(await refusal({ lanes: [LANE], term: 3, recoveredCut: { [LANE]: head - 1 } }), { code: "failover_order" });
  t.is(count("failover_order"), 2);
  t.is(count("answered"), 3);
  t.deepEqual(await failoverCommitsAfter(committed), [], "the stale requests committed nothing");
  t.like(d.controller.controlState().failovers?.[`${d.volume}/${LANE}`], { term: 3, recoveredCut: head - 2 });
});
