/**
 * Failover and repair-worker requests answered through the controller's step
 * (actors/controller/controller-requests.ts): a malformed or misaddressed request is answered with
 * its code and counted, commits nothing, and leaves the data unchanged; an accepted one becomes an
 * effect whose outcome comes back as an event and is answered then. No NATS, no files, no clock.
 */
import test from "ava";
import { controllerStep } from "../../actors/controller/controller-step.ts";
import { initialControllerData } from "../../actors/controller/controller-state.ts";
import type { ControllerConfig } from "../../actors/controller/controller-config.ts";
import type { ControllerEffect } from "../../actors/controller/controller-effects.ts";
import { decodeMessage, encodeMessage } from "../../transport/protocol/wire/index.ts";
import { failoverAnswerSpec, failoverRequestSpec } from "../../transport/protocol/wire/failover-messages.ts";
import { repairAnswerSpec } from "../../transport/protocol/wire/repair-messages.ts";
import { failoverSubject, repairSubject, RepairOp } from "../../transport/protocol/subjects.ts";
import type { InboundMessage } from "../../transport/transport.ts";

const config = { controllerId: "ctl", topology: { volume: "vol1", lanes: ["l0"], holderSites: {}, bases: [], staleAfterMs: 1 } } as unknown as ControllerConfig;
const d = Object.freeze(initialControllerData(config));
const msg = (subject: string, data: Uint8Array): InboundMessage => ({ subject, data, headers: {}, reply: "_INBOX.1" });
const request = (volume = "vol1") => encodeMessage(failoverRequestSpec, { volume, lanes: ["l0"], term: 2, recoveredCut: { l0: 10 } });
const counts = (effects: readonly ControllerEffect[]) => effects.flatMap((e) => (e.type === "count" ? [e.name] : []));
const answerOf = (effects: readonly ControllerEffect[], spec: typeof failoverAnswerSpec | typeof repairAnswerSpec) => {
  const r = effects.find((e) => e.type === "respond");
  return r?.type === "respond" ? decodeMessage(spec, r.payload) : undefined;
};

test("a failover request for the volume of its subject is committed as an effect, then answered with the plan", (t) => {
  const m = msg(failoverSubject("vol1"), request());
  const asked = controllerStep(d, { type: "nats.failover", msg: m });
  t.is(asked.state, d);
  t.deepEqual(asked.effects, [{ type: "commitFailover", msg: m, request: { volume: "vol1", lanes: ["l0"], term: 2, recoveredCut: { l0: 10 } } }]);
  const plan = { term: 2, recoveredCut: { l0: 10 }, oldHead: { l0: 12 }, firstSeq: { l0: 13 }, failoverSeq: { l0: 40 }, controlSeq: { l0: 41 } };
  const done = controllerStep(d, { type: "failover.committed", msg: m, plan });
  t.deepEqual(counts(done.effects), ["failover_request_answered"]);
  t.deepEqual(answerOf(done.effects, failoverAnswerSpec), { ok: true, plan });
  t.is((done.effects.find((e) => e.type === "respond") as { msg: InboundMessage }).msg, m, "the answer goes to the asker");
});

test("a failover request naming another volume, or bytes that are none, is refused with its code and commits nothing", (t) => {
  const other = controllerStep(d, { type: "nats.failover", msg: msg(failoverSubject("vol1"), request("vol2")) });
  t.is(other.state, d);
  t.truthy(other.refused);
  t.false(other.effects.some((e) => e.type === "commitFailover"));
  t.deepEqual(counts(other.effects), [`failover_request_${other.refused!.replace(/^failover_request_/, "")}`]);
  t.like(answerOf(other.effects, failoverAnswerSpec), { ok: false, code: other.refused });
  const junk = controllerStep(d, { type: "nats.failover", msg: msg(failoverSubject("vol1"), new Uint8Array([7])) });
  t.is(junk.state, d);
  t.like(answerOf(junk.effects, failoverAnswerSpec), { ok: false });
});

test("a commit that fails is answered with its code and counted", (t) => {
  const m = msg(failoverSubject("vol1"), request());
  const r = controllerStep(d, { type: "failover.failed", msg: m, code: "stale_term", message: "term 2 does not advance" });
  t.deepEqual(counts(r.effects), ["failover_request_stale_term"]);
  t.deepEqual(answerOf(r.effects, failoverAnswerSpec), { ok: false, code: "stale_term", message: "term 2 does not advance" });
});

test("a repair worker's request on this volume becomes an answerRepair effect; another volume's is refused", (t) => {
  const m = msg(repairSubject("vol1", RepairOp.View), new Uint8Array([1]));
  const r = controllerStep(d, { type: "nats.repair", msg: m });
  t.deepEqual(r.effects, [{ type: "answerRepair", msg: m, op: RepairOp.View }]);
  const other = controllerStep(d, { type: "nats.repair", msg: msg(repairSubject("vol2", RepairOp.View), new Uint8Array([1])) });
  t.is(other.state, d);
  t.false(other.effects.some((e) => e.type === "answerRepair"));
  t.like(answerOf(other.effects, repairAnswerSpec), { ok: false, code: other.refused });
  t.deepEqual(counts(other.effects), [`repair_request_${other.refused!.replace(/^repair_request_/, "")}`]);
  const answered = controllerStep(d, { type: "repair.answered", msg: m, payload: new Uint8Array([9]) });
  t.deepEqual(answered.effects, [{ type: "count", name: "repair_request_answered" }, { type: "respond", msg: m, payload: new Uint8Array([9]) }]);
  const failed = controllerStep(d, { type: "repair.failed", msg: m, code: "repair_request_unknown_repair", message: "no such repair" });
  t.deepEqual(counts(failed.effects), ["repair_request_unknown_repair"]);
});
