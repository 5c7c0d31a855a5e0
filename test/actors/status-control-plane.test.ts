import test from "ava";
import { decodeMessage, encodeMessage } from "../../transport/protocol/wire/index.ts";
import { volumeStatusSpec } from "../../transport/protocol/wire/volume-status.ts";
import { statusDocument } from "../../actors/controller/status-document.ts";
import { evaluateState, parseEvaluationState } from "../../policies/index.ts";
import { EAST_AND_WEST, exampleJson } from "../policies/worked-example-fixture.ts";

test("the status document carries each scenario's control-plane finding through its wire form; a state without one gives the document as before", (t) => {
  const j = exampleJson();
  // Many replicas and controllers, all lost: the reason stays within the wire's 256 characters.
  const many = (prefix: string) => Array.from({ length: 9 }, (_, i) => ({ id: `${prefix}-with-a-long-name-${i}`, region: i % 2 === 0 ? "us-east" : "us-west" }));
  j.controlPlane = { version: 1, log: "ctl", logReplicas: many("control-server"), controllers: many("controller") };
  const state = parseEvaluationState(j);
  const doc = statusDocument("ctl-1", 9, state, evaluateState(state), 0);
  const back = decodeMessage(volumeStatusSpec, encodeMessage(volumeStatusSpec, doc)).scenarios.find((s) => s.name === EAST_AND_WEST)!;
  t.deepEqual(back.controlPlane, { lost: ["quorum", "controller"], logReplicas: { surviving: [], of: 9, quorum: 5 }, controllers: [], keyAuthority: true });
  const reason = back.reasons!.find((r) => r.startsWith("control_plane_lost: "))!;
  t.true(reason.length <= 256 && reason.endsWith("…"), reason);
  const plain = parseEvaluationState(exampleJson());
  t.is(decodeMessage(volumeStatusSpec, encodeMessage(volumeStatusSpec, statusDocument("ctl-1", 9, plain, evaluateState(plain), 0))).scenarios[0]!.controlPlane, undefined);
});
