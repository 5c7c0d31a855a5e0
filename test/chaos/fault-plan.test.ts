/**
 * The chaos fault schedule (pure): deterministic per seed, and every seed fails the control plane
 * over at least once (the stream leader's server killed, or the active controller frozen past its
 * lease timeout), besides a server restart and a holder kill.
 */
import test from "ava";
import { chaosPlan, ChaosFaultKind, type ChaosFault } from "../../tools/chaos/fault-plan.ts";

const opts = { durationMs: 40_000, regions: ["east", "west"], holders: ["h-e1", "h-e2", "h-w1", "h-w2"], leaseTimeoutMs: 3_000 };

test("the same seed gives the same schedule; faults are sorted and inside the window", (t) => {
  t.deepEqual(chaosPlan(7101, opts), chaosPlan(7101, opts));
  for (let seed = 1; seed <= 200; seed++) {
    const plan = chaosPlan(seed, opts);
    t.true(plan.length >= 4 && plan.length <= 7, `seed ${seed}: ${plan.length} faults`);
    t.deepEqual(plan.map((f) => f.atMs), [...plan.map((f) => f.atMs)].sort((a, b) => a - b));
    t.true(plan.every((f) => f.atMs >= 3_000 && f.atMs <= opts.durationMs - 3_000));
  }
});

test("every seed has a server restart, a holder kill and a control-plane failover; a frozen controller stays frozen past its lease timeout", (t) => {
  const kinds = new Set<string>();
  for (let seed = 1; seed <= 200; seed++) {
    const plan = chaosPlan(seed, opts);
    const has = (k: ChaosFault["kind"]) => plan.some((f) => f.kind === k);
    t.true(has(ChaosFaultKind.serverRestart) && has(ChaosFaultKind.holderKill), `seed ${seed}`);
    t.true(has(ChaosFaultKind.controlLeaderKill) || has(ChaosFaultKind.controllerPause), `seed ${seed}: a control failover`);
    for (const f of plan) {
      kinds.add(f.kind);
      if (f.kind === ChaosFaultKind.controllerPause) t.true(f.ms > opts.leaseTimeoutMs);
    }
  }
  t.deepEqual([...kinds].sort(), Object.values(ChaosFaultKind).sort(), "every kind is drawn for some seed");
});
