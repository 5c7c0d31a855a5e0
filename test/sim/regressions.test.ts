/**
 * Every violation a sweep outside the corpus found, replayed for good: the seed with its own
 * schedule and with the minimized schedule the minimizer printed when it was found. Each must now
 * run clean — no invariant broken, no actor error, and every strike the contract covers back
 * within the repair budget. (Worlds at the default length, 24 s, unless the sweep that found one ran longer.)
 */
import test from "ava";
import { runActorWorld } from "../../sim/actor-runner.ts";
import type { FaultEvent } from "../../sim/fault-schedule.ts";

interface Regression {
  readonly seed: number;
  readonly found: string;
  readonly minimized: readonly FaultEvent[];
  /** Virtual length of the world when the sweep that found it ran longer than the default 24 s. */
  readonly durationMs?: number;
  /** Replay only the minimized schedule (a long world whose own schedule adds nothing the minimized one lacks). */
  readonly minimizedOnly?: boolean;
  /** A failover world (`--failover`: a standby controller, pauses of the active one). */
  readonly failover?: boolean;
}

const REGRESSIONS: readonly Regression[] = [
  {
    seed: 1264,
    found: "release_uncovered: releases leave crash:h3 at 60, below its confirmed 126 (h2#1's RAM claims still counted after its restart)",
    minimized: [
      { kind: "strike", atMs: 12734, scenario: "crash:h2" },
      { kind: "partition", atMs: 23938, durationMs: 4058, a: ["s-h2", "s-h3", "s-writer"], b: ["s-h1"] },
    ],
  },
  { seed: 2210, found: "release_uncovered: releases leave crash:writer at 0, below its confirmed 116", minimized: [{ kind: "strike", atMs: 11007, scenario: "crash:h1" }] },
  { seed: 2359, found: "release_uncovered: releases leave crash:h8 at 0, below its confirmed 102", minimized: [{ kind: "strike", atMs: 13844, scenario: "crash:h7" }] },
  {
    seed: 2463,
    found: "lost_confirmed_write: crash:h1: writes through 57 were confirmed, only 0 survive (power:use1 restarts counted as still holding)",
    minimized: [
      { kind: "strike", atMs: 13413, scenario: "power:use1" },
      { kind: "strike", atMs: 22810, scenario: "crash:h1" },
      { kind: "evidence_degrade", atMs: 22824, holder: "h3" },
    ],
  },
  { seed: 10256, found: "liveness never: after crash:h2 the cut it owed stayed at 145 (target 184); clean since RAM holders seal only half-full segments (found by the 10,001.. sweep)", minimized: [{ kind: "strike", atMs: 10543, scenario: "crash:h2" }] },
  {
    seed: 10569,
    found: "liveness late (9.9 s > 9.5 s budget): after a controller outage coverage repair waited for two slow evaluation rounds",
    minimized: [
      { kind: "strike", atMs: 12797, scenario: "crash:h2" },
      { kind: "controller_loss", atMs: 16001, durationMs: 1500 },
    ],
  },
  {
    seed: 524172,
    found:
      "liveness never: power:use1 stuck at 18 (target 59): a restarted writer re-sealed its recovered units under its new term, so a downstream holder refused the same records re-sent from disk as stale_term, and units a terminal holder released before its receipt arrived stayed pinned upstream forever, never spilled (found by the 524000.. sweep)",
    minimized: [
      { kind: "partition", atMs: 3831, durationMs: 1016, a: ["s-h3"], b: ["s-h1", "s-h2", "s-writer"] },
      { kind: "strike", atMs: 11204, scenario: "power:use1" },
    ],
  },
  {
    seed: 610007,
    found:
      "liveness late: after crash:h1 the refill of 1-178 from the only other copy (across regions) finished 0.5 s past the budget: a small copy started first made the large new gap wait out the retry interval, and the fetch paged through one round trip at a time (found by the 610001.. sweep)",
    minimized: [{ kind: "strike", atMs: 13231, scenario: "crash:h1" }],
  },
  { seed: 1115, found: "liveness never: crash:h3 restarted without its spill stream (a new spill file's directory entry was never synced)", minimized: [{ kind: "strike", atMs: 7446, scenario: "crash:h3" }] },
  {
    seed: 930138,
    found:
      "liveness late (13.0 s > 8 s budget; never with the minimized schedule, cut stuck at 79 of 87): after power:use1 the single disk holder h1 restarted from a spill segment holding 79 and 81 but not 80, receipted the hole 80 as RAM-resident, so the restarted writer never re-sent it (found by the 930001.. sweep)",
    minimized: [{ kind: "strike", atMs: 8647, scenario: "power:use1" }],
  },
  {
    seed: 960179,
    found:
      "liveness never: after crash:h1 every cut stayed at 17 (target 287): the protected-RAM holder h1 restarted from its preserved memory without 18, 24-91 and 97-120, which it had taken from h2 by custody transfer while partitioned from the writer (transfers were not mirrored into preserved memory), and h2 had released them (found by the 960001.. sweep)",
    minimized: [
      { kind: "partition", atMs: 1165, durationMs: 7166, a: ["s-h2", "s-writer"], b: ["s-h1"] },
      { kind: "strike", atMs: 14091, scenario: "crash:h1" },
    ],
  },
  {
    seed: 960216,
    found:
      "liveness never: after crash:h2 every cut stayed at 5 (target 178): h1 and h3 had released 6-24 relying on h2's protected RAM, h2's hold-up evidence then degraded, and coverage repair found no holder to copy 6-24 to (a released range never returns to its holder; coverage_gap_no_target x16) — now a standby is enlisted (found by the 960001.. sweep)",
    minimized: [
      { kind: "evidence_degrade", atMs: 2710, holder: "h2" },
      { kind: "strike", atMs: 13710, scenario: "crash:h2" },
    ],
  },
  {
    seed: 996059,
    durationMs: 60_000,
    minimizedOnly: true,
    found:
      "liveness late (10.3 s > 8 s budget) after crash:h1: every coverage copy to the enlisted standby (the only holder outside use1-az1) first asked h3, and twice in a row one of h3's fetch parts was lost and waited out the 5 s timeout — now a source that failed a fetch is asked last for five retry intervals (found by the 996000.. sweep at 60 s; the minimized schedule is the one strike, found by hand)",
    minimized: [{ kind: "strike", atMs: 24104, scenario: "crash:h1" }],
  },
  {
    seed: 996049,
    durationMs: 60_000,
    minimizedOnly: true,
    found:
      "liveness late (9.3 s > 8 s budget) after crash:h4: two coverage copies to the enlisted standby each waited out a whole 5 s fetch timeout for a lost page request (h1's, then the restarted h4's) — now a page request is tried again after a quarter of the timeout (found by the 996000.. sweep at 60 s; its own schedule of three faults: no shorter one found by hand)",
    minimized: [
      { kind: "evidence_degrade", atMs: 16494, holder: "h4" },
      { kind: "strike", atMs: 29662, scenario: "crash:writer" },
      { kind: "strike", atMs: 39312, scenario: "crash:h4" },
    ],
  },
  {
    seed: 857158,
    found:
      "liveness late (8.5 s > 8 s budget) after crash:h5: the coverage copy to the enlisted standby (the only holder outside use1-az1) asked h6, the only source of 46-47, and both tries of one page were lost (1.25 s + 5 s), so the copy ended without them after 6.4 s and held up the lane's next copies — now a page request's copies go out at 0, 1/4 and 1/2 of the timeout and the first reply wins (found by the 857000.. sweep; minimized by hand to the one strike)",
    minimized: [{ kind: "strike", atMs: 8566, scenario: "crash:h5" }],
  },
  {
    seed: 998428,
    durationMs: 60_000,
    found:
      "liveness never (cut of destroy:use1-az1 stuck at 349 of 367) after crash:h1: the one vault standby, the only holder outside use1-az1, had filled its 32 MiB arena (it can release nothing: it is the scenario's only copy), refused every transfer offer for lack of space, and coverage repair re-sent it the same units every retry for 30 s — now a target that does not claim what it was sent is passed over after three retries past the grace, and the gap enlists the next standby (found by the 998400.. sweep at 60 s; minimized by hand to the one strike)",
    minimized: [{ kind: "strike", atMs: 26114, scenario: "crash:h1" }],
  },
  {
    seed: 1003480,
    found:
      "liveness never: power:use1 at 10.462 s hit the writer's site with acknowledged write 180 in its outbox and not yet at the single holder h1; the restarted writer re-shipped its whole outbox from 1, and with 64 KiB units h1's credit let three through per grant, so units h1 and its standby had long taken over held 180 back until 13.4 s after the strike (never, once a later partition took the rest of the run) — now a unit every first hop has receipted, or the control log released at them, leaves the credit queue unsent (found by the 1003400.. sweep; minimized to the one strike)",
    minimized: [{ kind: "strike", atMs: 10462, scenario: "power:use1" }],
  },
  {
    seed: 3456018,
    failover: true,
    found:
      "release_uncovered: releases leave crash:writer at 0, below its confirmed 322: the active controller ctrl-b, paused at 21.2 s (during a partition) past the end of the run, was resumed by the world's shutdown and committed a release decided on its frozen view — now a process paused when the run ends stays frozen (found by the 3456000.. failover sweep, with 3456065, 3456075, 3456107 and 3456155)",
    minimized: [
      { kind: "evidence_degrade", atMs: 1860, holder: "h2" },
      { kind: "controller_loss", atMs: 12970, durationMs: 4091 },
      { kind: "controller_pause", atMs: 13540, durationMs: 3076 },
      { kind: "partition", atMs: 20585, durationMs: 4515, a: ["s-h3", "s-writer"], b: ["s-h1", "s-h2"] },
      { kind: "controller_pause", atMs: 21176, durationMs: 4224 },
    ],
  },
];

for (const r of REGRESSIONS) {
  for (const schedule of r.minimizedOnly === true ? (["minimized"] as const) : (["seed", "minimized"] as const)) {
    test(`regression sim seed ${r.seed} (${schedule} schedule): ${r.found} — now clean`, async (t) => {
      const run = await runActorWorld(r.seed, { ...(schedule === "minimized" ? { faults: r.minimized } : {}), ...(r.durationMs !== undefined ? { durationMs: r.durationMs } : {}), ...(r.failover === true ? { failover: true } : {}) });
      t.is(run.violation, undefined, run.violation?.message);
      t.deepEqual(run.errors ?? [], []);
      t.deepEqual(run.recovery.failures, []);
      t.is(run.recovery.late + run.recovery.never, 0);
    });
  }
}

