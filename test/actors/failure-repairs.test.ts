import test from "ava";
import { failuresToRepair, repairIdOf } from "../../actors/controller/failure-repairs.ts";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { createOb, eventOn, REGION, who } from "../custody/control-fixtures.ts";

const admit = (holderId: string, incarnation: number, failureDomain: string): ControlEventBody => ({ type: "admit_holder", holderId, incarnation, publicKey: generateHolderKeyPair().publicKey, failureDomain });

/** A log with h1, h3 in one zone, h2 elsewhere, standby h4, and obligation ob1 on h1+h2; then `more`. */
async function logWith(...more: ControlEventBody[]) {
  const store = new InMemoryControlLog(REGION);
  const f = new ControlLogFollower(store);
  const base = [admit("h1", 1, "aws/z1/r1"), admit("h2", 1, "aws/z2/r1"), admit("h3", 1, "aws/z1/r2"), admit("h4", 1, "aws/z3/r1"), createOb("ob1", ["h1", "h2"])];
  for (const b of [...base, ...more]) await commitControlEvent(store, f, who("ctl-a"), () => b);
  return { entries: await store.readAll(), state: f.state };
}

const failZone: ControlEventBody = { type: "declare_failure", scope: "zone", domain: "aws/z1", holderIds: ["h1"] };

test("a committed declare-failure is to be repaired, keyed by its sequence, naming the holders of its domain", async (t) => {
  const { entries, state } = await logWith(failZone);
  const open = failuresToRepair(entries, state, ["ob1"]);
  t.is(open.length, 1);
  t.is(open[0]!.seq, 6);
  t.deepEqual(open[0]!.failed, ["h1", "h3"]);
  t.is(repairIdOf("vol", 6), "repair-vol-6");
});

test("a failure followed by an activate_replacement away from its failed holder is not repaired again (log replay after restart)", async (t) => {
  const { entries, state } = await logWith(
    failZone,
    { type: "prepare_transfer", transferId: "x-1", obligationId: "ob1", fromHolder: "h1", toHolder: "h4", ranges: RangeSet.of(1, 10) },
    { type: "activate_replacement", transferId: "x-1" },
  );
  t.deepEqual(failuresToRepair(entries, state, ["ob1"]), []);
  // Only the entries up to the failure: still open.
  t.is(failuresToRepair(entries.slice(0, 6), state, ["ob1"]).length, 1);
});

test("a failure the fold rejected, or of holders responsible for nothing, needs no repair", async (t) => {
  // Appended past the committer's pre-check (as a foreign writer could): the fold rejects it.
  const store = new InMemoryControlLog(REGION);
  const f = new ControlLogFollower(store);
  for (const b of [admit("h1", 1, "aws/z1/r1"), createOb("ob1", ["h1"])]) await commitControlEvent(store, f, who("ctl-a"), () => b);
  await store.append(eventOn(f.state, { type: "declare_failure", scope: "holder", domain: "aws/z1", holderIds: ["nobody"] }), f.state.lastSeq);
  const state = await f.refresh();
  t.is(state.rejected.length, 1);
  t.deepEqual(failuresToRepair(await store.readAll(), state, ["ob1"]), []);
  const idle = await logWith({ type: "declare_failure", scope: "holder", domain: "aws/z3/r1", holderIds: ["h4"] });
  t.deepEqual(failuresToRepair(idle.entries, idle.state, ["ob1"]), []);
  const zone = await logWith(failZone);
  t.deepEqual(failuresToRepair(zone.entries, zone.state, ["ob-of-another-volume"]), [], "only this volume's obligations count");
});
