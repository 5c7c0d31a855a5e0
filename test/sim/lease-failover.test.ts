/**
 * Controller failover in the simulator (issue #45): the lease audit catches a fold that would let a
 * deposed controller's release through (so its checks can fail), counts the production fold's
 * refusals, and a failover world whose active controller is frozen past the lease timeout hands
 * the volume to the standby and stays free of violations.
 */
import test from "ava";
import { ControlFenceCode } from "../../custody/control-error.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import { foldControlEntry, foldControlLog, type ControlState } from "../../custody/control-state.ts";
import type { ControlLogRecord } from "../../custody/control-state.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { runActorWorld } from "../../sim/actor-runner.ts";
import { InvariantId } from "../../sim/invariants.ts";
import { LeaseAudit } from "../../sim/lease-audit.ts";
import { admit, createOb, eventOn, release } from "../custody/control-fixtures.ts";

/** A log where ctl-b took vol1's lease from ctl-a, and ctl-a's release was appended anyway (as a controller skipping its own check would). */
async function deposedRelease(): Promise<InMemoryControlLog> {
  const store = new InMemoryControlLog("r");
  const bodies: [string, ControlEventBody][] = [
    ["operator", admit("h1")],
    ["operator", admit("h2")],
    ["operator", createOb("ob1", ["h1", "h2"])],
    ["ctl-a", { type: "claim_lease", volume: "vol1", term: 1, renewMs: 1_000, timeoutMs: 4_000 }],
    ["ctl-b", { type: "claim_lease", volume: "vol1", term: 2, renewMs: 1_000, timeoutMs: 4_000 }],
    ["ctl-a", release("h1", 1, 5, ["h2"])],
  ];
  for (const [who, body] of bodies) {
    const s = foldControlLog(await store.readAll());
    await store.append(eventOn(s, body, who), s.lastSeq);
  }
  return store;
}

/** A fold that forgets leases when they would refuse an event: the bug the audit exists to catch. */
const leaseBlindFold = (s: ControlState, e: ControlLogRecord): ControlState => {
  const next = foldControlEntry(s, e);
  if (next.rejected.at(-1)?.code !== ControlFenceCode.not_lease_holder || next.rejected.length === s.rejected.length) return next;
  const { leases: _ignored, ...without } = s;
  return { ...foldControlEntry(without, e), leases: s.leases! };
};

test("the lease audit catches a fold that accepts a deposed controller's release", async (t) => {
  const audit = new LeaseAudit(await deposedRelease(), leaseBlindFold);
  const v = await audit.check(0);
  t.is(v.length, 1);
  t.like(v[0], { invariant: InvariantId.deposedRelease, detail: { author: "ctl-a", holder: "ctl-b", term: 2 } });
});

test("with the production fold the deposed release is refused, counted, and the audit finds nothing", async (t) => {
  const audit = new LeaseAudit(await deposedRelease());
  t.deepEqual(await audit.check(0), []);
  t.deepEqual(audit.figures(), { terms: 2, refused: 1 });
});

test("failover world: the active controller frozen past the lease timeout hands the volume to the standby, which resumes; no invariant breaks", async (t) => {
  // Seed 3456000 pauses the active controller for 7.6 s at 15 s (longer than the 4 s lease timeout).
  const r = await runActorWorld(3456000, { failover: true });
  t.is(r.violation, undefined, r.violation?.message);
  t.deepEqual(r.errors ?? [], []);
  const lines = r.trace.filter((e) => e.kind === "lease").map((e) => String((e.detail as { line: string }).line));
  t.true(lines.some((l) => /ctrl-b: claimed the control lease of vol1 at term 2/.test(l)), lines.join("\n"));
  t.true(lines.some((l) => /ctrl: lost the control lease of vol1 \(ctrl-b holds it at term 2\); stepping down/.test(l)), lines.join("\n"));
  t.is(r.counters["lease_terms"], 2);
  t.deepEqual(r.recovery.failures, []);
});
