import type { ControlEvent, ControlEventBody } from "../../custody/control-event.ts";
import type { ControlState } from "../../custody/control-state.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { keys, manualClock } from "./receipt-fixtures.ts";

export const REGION = "us-east";
export const clock = manualClock();
export const who = (controller: string) => ({ controller, clock });

/** An event prepared against `s` (its fence and head hash) with `body`. */
export function eventOn(s: ControlState, body: ControlEventBody, controller = "ctl-a"): ControlEvent {
  return { region: REGION, controller, preparedEpoch: s.topologyEpoch, preparedGeneration: s.policyGeneration, prevHash: s.headHash, issuedAt: 1_800_000_000_000, ...body };
}

export const admit = (holderId: string, incarnation = 1, failureDomain = `aws/us-east-1/az-${holderId}`): ControlEventBody => ({
  type: "admit_holder",
  holderId,
  incarnation,
  publicKey: keys[holderId]!.publicKey,
  failureDomain,
});

export const createOb = (obligationId: string, holders: string[], fromSeq = 1): ControlEventBody => ({
  type: "create_obligation",
  obligationId,
  volume: "vol1",
  lane: "l0",
  representation: "raw",
  holders,
  fromSeq,
});

export const release = (holderId: string, first: number, last: number, reliesOn: string[], obligationId = "ob1"): ControlEventBody => ({
  type: "release_ranges",
  obligationId,
  holderId,
  ranges: RangeSet.of(first, last),
  reliesOn,
});
