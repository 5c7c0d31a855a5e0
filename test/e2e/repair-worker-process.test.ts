/**
 * Repair as a message flow (issue #18): a controller configured with `repair.worker: "remote"`
 * hands each repair of a declared failure to a repair worker running as its own process
 * (`custody run repair`); the worker's repair actor asks the controller over NATS for what it reads
 * and for the commits it needs. Real nats-servers (a supercluster), real holder actors, a real
 * child process. A request that is not part of a repair the controller handed out is refused.
 * Without a worker, the repair is a child actor of the controller's machine.
 */
import anyTest, { type TestFn } from "ava";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { RangeSet } from "../../lanes/range-set.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/wire/codec.ts";
import { repairActivateSpec, repairAdmitSpec, repairAnswerSpec, repairTaskSpec, repairViewRequestSpec, type WireRepairTask } from "../../transport/protocol/wire/repair-messages.ts";
import { RepairOp, repairSubject, repairTaskSubject } from "../../transport/protocol/subjects.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { RoleProcess } from "../kit/role-process.ts";
import { repairChildId } from "../../actors/controller/controller.machine.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE } from "./deployment.ts";
import { blockData, eventually, tempDir } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

const REMOTE = { standby: [{ holderId: "h-e3", site: "s-e3" }], bandwidthBytesPerSec: 125_000_000, worker: "remote" as const, workerTimeoutMs: 60_000 };

test.serial("a repair handed to a repair worker in another process (custody run repair) makes the replacement cover the failed holder's ranges, and the controller's status shows the repair", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-rw", "use-rw", { releasable: ["h-e2"], repair: REMOTE });
  t.context.defer(() => d.stop());
  const dir = tempDir("custody-repair-worker-");
  const config = join(dir, "repair.json");
  writeFileSync(config, JSON.stringify({ role: "repair", nats: { servers: d.urls["us-east"]! }, workerId: "rw-1", volumes: [d.volume] }));
  const worker = new RoleProcess("repair", config, process.cwd());
  t.context.defer(() => worker.stop(10_000));
  const ready = await worker.start();
  t.is(ready.role, "repair");
  t.not(ready.pid, process.pid, "the worker is another process");

  for (let i = 0; i < 40; i++) await d.writer.write((i * 11) % BLOCKS, blockData(9000 + i));
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  const retainedBy = (h: string) => d.controller.holdings({ holderId: h }).reduce((a, x) => a.union(x.retained), RangeSet.EMPTY);
  await eventually(() => retainedBy("h-e1").covers(1, head), "the controller saw h-e1 receipt the writes", 5000);
  const lost = retainedBy("h-e1");
  await d.kill("h-e1");
  const { seq: failureSeq } = await d.declareFailure({ holder: "h-e1" });
  await eventually(() => d.controller.repairs().some((r) => r.failureSeq === failureSeq && r.state !== "running"), "the repair ended", 30_000, () => `${JSON.stringify(d.controller.repairs())} worker: ${worker.log}`);

  const [rep] = d.controller.repairs();
  t.is(rep!.state, "done", rep!.reason);
  t.is(rep!.replacement, "h-e3");
  t.true((rep!.copiedBytes ?? 0) > 0, "units were copied");
  t.log(`remote repair of failure @${failureSeq}: ${rep!.copiedBytes} B in ${rep!.measuredMs} ms (estimate ${rep!.estimateMs} ms), ${d.controller.counters.get("repair_request_answered")} requests answered over NATS`);
  t.true(retainedBy("h-e3").coversAll(lost), `the replacement retains what h-e1 retained (${lost}); it retains ${retainedBy("h-e3")}`);
  const o = d.controller.controlState().obligations[obligationIdOf(d.volume, LANE)]!;
  t.true(o.responsible["h-e3"]?.coversAll(lost) ?? false, "the control log makes the replacement responsible for the failed holder's ranges");
  t.true(d.controller.controlState().holders["h-e3"] !== undefined, "the replacement was admitted");
  // Everything the repair read and committed went through the controller's repair service over NATS.
  t.true((d.controller.counters.get("repair_request_answered") ?? 0) >= 4, "view, protect, admit, activate answered over NATS");
  t.is(d.controller.counters.get("repair_request_refused") ?? 0, 0);
  const log = await (await openJetStreamControlLog(d.writer.transport.connection, { region: "use-rw" })).readAll();
  t.true(log.some((e) => e.event.type === "activate_replacement" && e.event.transferId === `repair-${d.volume}-${failureSeq}-${LANE}-h-e1`), "the controller committed the activation the worker asked for");
  await eventually(() => d.controller.status()?.repairs?.some((r) => r.failureSeq === failureSeq && r.state === "done") ?? false, "the status document reports the repair", 5000);
  t.true(worker.alive, "the worker keeps serving");
});

test.serial("a forged repair request (a repair the controller did not hand out, another replacement, custody moved from a holder that did not fail, a malformed body) is refused with a typed, counted error and changes no state", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-rw-forged", "use-rw-forged", { releasable: ["h-e2"], repair: REMOTE });
  t.context.defer(() => d.stop());
  const forger = await NatsTransport.connect({ servers: d.urls["us-east"]!, name: "forger" });
  t.context.defer(() => forger.close());
  // The test stands in for a worker that takes the task and holds it: the repair stays open.
  const tasks: WireRepairTask[] = [];
  forger.subscribe(repairTaskSubject(d.volume), (m) => tasks.push(decodeMessage(repairTaskSpec, m.data)));
  await forger.flush();
  for (let i = 0; i < 10; i++) await d.writer.write(i, blockData(9500 + i));
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  await d.kill("h-e1");
  await d.declareFailure({ holder: "h-e1" });
  await eventually(() => tasks.length === 1, "the controller handed the repair out", 10_000);
  const task = tasks[0]!;
  const before = { seq: d.controller.controlState().lastSeq, holders: Object.keys(d.controller.controlState().holders).sort(), holds: Object.keys(d.controller.controlState().holds).sort() };

  const ask = async (op: RepairOp, data: Uint8Array) => decodeMessage(repairAnswerSpec, (await forger.request(repairSubject(d.volume, op), data, { timeoutMs: 5000 })).data);
  const otherKey = new Uint8Array(32).fill(7);
  const refusals = [
    await ask(RepairOp.Admit, encodeMessage(repairAdmitSpec, { repairId: "repair-not-handed-out", replacement: task.replacement })),
    await ask(RepairOp.View, encodeMessage(repairViewRequestSpec, { repairId: "repair-not-handed-out", lanes: [LANE] })),
    await ask(RepairOp.Admit, encodeMessage(repairAdmitSpec, { repairId: task.repairId, replacement: { ...task.replacement, publicKey: otherKey } })),
    await ask(RepairOp.Admit, encodeMessage(repairAdmitSpec, { repairId: task.repairId, replacement: { ...task.replacement, holderId: "h-evil" } })),
    await ask(RepairOp.Activate, encodeMessage(repairActivateSpec, { repairId: task.repairId, transferId: `${task.repairId}-${LANE}-h-e2`, lane: LANE, fromHolder: "h-e2", toHolder: task.replacement.holderId, ranges: [[1, 10]] })),
    await ask(RepairOp.Activate, encodeMessage(repairActivateSpec, { repairId: task.repairId, transferId: `${task.repairId}-${LANE}-h-e1`, lane: LANE, fromHolder: "h-e1", toHolder: "h-e2", ranges: [[1, 10]] })),
  ];
  for (const [i, a] of refusals.entries()) {
    t.false(a.ok, `request ${i} refused`);
    t.is(a.code, "repair_request_refused", `request ${i}: ${a.message}`);
  }
  const malformed = await ask(RepairOp.Admit, encodeMessage(repairViewRequestSpec, { repairId: task.repairId, lanes: [LANE] }));
  t.false(malformed.ok);
  t.is(malformed.code, "wrong_kind", "a body of another kind is refused by the strict decoder");
  t.is(d.controller.counters.get("repair_request_refused"), refusals.length, "each refusal is counted");
  t.is(d.controller.counters.get("repair_request_wrong_kind"), 1);
  t.is(d.controller.counters.get("repair_request_answered") ?? 0, 0, "nothing was answered");
  const s = await d.controller.refreshControlState();
  t.deepEqual({ seq: s.lastSeq, holders: Object.keys(s.holders).sort(), holds: Object.keys(s.holds).sort() }, before, "no control-log entry, no holder admitted, no hold changed");
});

test.serial("without a worker, a declared failure's repair runs as a child actor of the controller's machine (repair.<repairId>), and the outcome it outputs is what the controller records", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-rw-child", "use-rw-child", { releasable: ["h-e2"], repair: { ...REMOTE, worker: "in-process" } });
  t.context.defer(() => d.stop());
  const parents = new Map<string, string | undefined>();
  const outputs = new Map<string, unknown>();
  const sub = d.controller.actor.system.inspect((e) => {
    const ref = e.actorRef as unknown as { id: string; _parent?: { id: string } };
    if (e.type === "@xstate.actor") parents.set(ref.id, ref._parent?.id);
    if (e.type === "@xstate.snapshot" && e.snapshot.status === "done") outputs.set(ref.id, (e.snapshot as { output?: unknown }).output);
  });
  t.context.defer(() => sub.unsubscribe());
  for (let i = 0; i < 10; i++) await d.writer.write(i, blockData(9700 + i));
  await d.writer.writer.sync(AZ_CONTRACT.name, 10_000);
  await d.kill("h-e1");
  const { seq: failureSeq } = await d.declareFailure({ holder: "h-e1" });
  await eventually(() => d.controller.repairs().some((r) => r.failureSeq === failureSeq && r.state !== "running"), "the repair ended", 20_000, () => JSON.stringify(d.controller.repairs()));
  const child = repairChildId(`repair-${d.volume}-${failureSeq}`);
  t.is(parents.get(child), d.controller.actor.id, "the repair actor's parent is the controller's actor");
  const out = outputs.get(child) as { report?: { measuredMs: number; copiedBytes: number } } | undefined;
  const [rep] = d.controller.repairs();
  t.is(rep!.state, "done", rep!.reason);
  t.is(rep!.measuredMs, out?.report?.measuredMs, "the record is the child's output");
  t.is(rep!.copiedBytes, out?.report?.copiedBytes);
  t.is(d.controller.counters.get("repair_request_answered") ?? 0, 0, "nothing went over the repair subjects");
});
