import test from "ava";
import { holderMachine, HolderState, type HolderEvent } from "../../actors/holder/holder.machine.ts";
import { parseHolderConfig } from "../../actors/holder/holder-config.ts";
import { initialHolderState } from "../../actors/holder/holder-state.ts";
import type { InboundMessage } from "../../transport/index.ts";

/**
 * Which events each state of the holder machine takes (read from the machine's definition: no
 * executor, no NATS, no clock). An event a state does not take changes nothing there.
 */

const config = {
  ...parseHolderConfig({
    holderId: "h1",
    incarnation: 1,
    site: { region: "r1", az: "a", host: "x" },
    residency: ["ram"],
    lanes: [{ volume: "vol1", lane: "l1", upstream: ["w"] }],
    arena: { limitBytes: 1 << 20 },
    receipts: {},
  }),
  incarnation: 1,
};

const at = (value: HolderState) => holderMachine.resolveState({ value, context: { state: initialHolderState(config) } });
const msg: InboundMessage = { subject: "s", data: new Uint8Array(), headers: {} };
const units: HolderEvent = { type: "nats.units", lane: "vol1/l1", msgs: [msg] };
const credit: HolderEvent = { type: "nats.credit", lane: "vol1/l1", edge: "h2", msg };
const evidence: HolderEvent = {
  type: "evidence.update" as const,
  evidence: {
    protectedBytes: 1,
    batteryHealth: 1,
    holdUpMs: 1,
    autonomousPreservation: true,
    drainBytesPerSec: 1,
    detectionMs: 0,
    persistenceCompletionMs: 0,
    marginMs: 0,
    measuredAt: 0,
    capabilityGeneration: 0,
  },
  nowMs: 0,
  ramQueuedBytes: 0,
};

test("while starting, the holder takes what its live subscriptions and timers bring, but no units and no evidence", (t) => {
  const s = at(HolderState.Starting);
  t.true(s.can(credit));
  t.true(s.can({ type: "nats.release", msg }));
  t.true(s.can({ type: "timer.arm", ms: 5, event: { type: "timer.receipts" } }));
  t.false(s.can(units), "units come only within credits it grants once serving");
  t.false(s.can(evidence), "evidence comes through the handle startHolder returns once serving");
  t.false(s.can({ type: "timer.evacuation" }));
  t.false(s.can({ type: "drain" }));
  t.true(s.can({ type: "retire" }));
});

test("serving and degraded_evidence take units, evidence and drain; draining takes units and evidence but no second drain", (t) => {
  for (const state of [HolderState.Serving, HolderState.DegradedEvidence, HolderState.Draining]) {
    const s = at(state);
    t.true(s.can(units), state);
    t.true(s.can(credit), state);
    t.true(s.can(evidence), state);
    t.true(s.can({ type: "timer.evacuation" }), state);
    t.is(s.can({ type: "drain" }), state !== HolderState.Draining, state);
    t.is(s.can({ type: "evacuation.start" }), state === HolderState.DegradedEvidence, "evacuation starts only on degrading");
  }
});

test("a fenced holder takes nothing but retire", (t) => {
  const s = at(HolderState.Fenced);
  for (const e of [units, credit, evidence, { type: "nats.release", msg } as const, { type: "timer.receipts" } as const])
    t.false(s.can(e), e.type);
  t.true(s.can({ type: "retire" }));
});
