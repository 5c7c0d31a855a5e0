import test from "ava";
import { AdmissionError, AdmissionRefusal, checkAutoAdmission, MAX_AUTO_INCARNATION_LEAP } from "../../custody/admission.ts";
import { foldControlLog, INITIAL_CONTROL_STATE } from "../../custody/control-state.ts";
import { hashControlEvent } from "../../custody/control-event.ts";
import { admit, eventOn } from "./control-fixtures.ts";
import { keys } from "./receipt-fixtures.ts";

// Issue #46 (item 6): a request signed with the holder's own key for incarnation 2^53-1 was
// admitted automatically, leaving no incarnation for any later restart of that holder.

const state = () => {
  const e = eventOn(INITIAL_CONTROL_STATE, admit("h1", 3));
  return foldControlLog([{ seq: 1, event: e, hash: hashControlEvent(e) }]);
};
const request = (incarnation: number) => ({ holderId: "h1", incarnation, publicKey: keys["h1"]!.publicKey, failureDomain: "aws/us-east-1/az-h1", at: 1 });

test("key-continuity admits the next incarnations, and leaves a leap past 1,024 (up to 2^53-1) to the operator", (t) => {
  t.notThrows(() => checkAutoAdmission(state(), request(4)));
  t.notThrows(() => checkAutoAdmission(state(), request(3 + MAX_AUTO_INCARNATION_LEAP)));
  for (const incarnation of [4 + MAX_AUTO_INCARNATION_LEAP, Number.MAX_SAFE_INTEGER]) {
    const err = t.throws(() => checkAutoAdmission(state(), request(incarnation)), { instanceOf: AdmissionError });
    t.is(err?.code, AdmissionRefusal.IncarnationLeap);
  }
});
