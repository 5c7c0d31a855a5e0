/**
 * Enlisting a standby for a coverage gap no admitted holder can take: which standby, what the
 * control log records (admission, then responsibility from the gap on), and what is refused.
 * Commits go through a real control log (in memory) and its fencing fold.
 */
import test from "ava";
import { Counters } from "../../core/index.ts";
import type { ControllerConfig } from "../../actors/controller/controller-config.ts";
import { StandbyEnlistment } from "../../actors/controller/standby-enlistment.ts";
import type { RepairLauncher } from "../../actors/controller/controller-ports.ts";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { InMemoryControlLog } from "../../custody/control-log.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { OPEN_END } from "../../custody/index.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { admit, createOb, release, REGION, who } from "../custody/control-fixtures.ts";
import { manualClock } from "../custody/receipt-fixtures.ts";

const OB = "vol1-l0";
const config = {
  topology: { volume: "vol1", lanes: ["l0"], holderSites: { h1: "s-1", h2: "s-2", "sb-east": "s-east", "sb-vault": "s-vault" } },
  repair: { standby: [{ holderId: "sb-east", site: "s-east" }, { holderId: "sb-vault", site: "s-vault" }, { holderId: "sb-late", site: "s-vault" }], bandwidthBytesPerSec: 1e8 },
} as unknown as ControllerConfig;

/** h1 and h2 responsible for vol1/l0 from 1; h1 released 1-24 relying on h2 (h2 alone keeps 6-24). */
async function world(opts: { launcher?: RepairLauncher | null; taken?: string[] } = {}) {
  const store = new InMemoryControlLog(REGION);
  const follower = new ControlLogFollower(store);
  const commit = (b: (s: typeof follower.state) => ControlEventBody) => commitControlEvent(store, follower, who("ctl-a"), b);
  for (const b of [admit("h1"), admit("h2"), createOb(OB, ["h1", "h2"]), release("h1", 1, 24, ["h2"], OB)]) await commit(() => b);
  const clock = manualClock();
  const counters = new Counters();
  const started: string[] = [];
  let nudges = 0;
  let settle!: () => void;
  const settled = () => new Promise<void>((r) => (settle = r));
  let next = settled();
  const launcher: RepairLauncher = {
    prepare: async (sb) => {
      started.push(sb.holderId);
      return { holderId: sb.holderId, incarnation: 1, publicKey: generateHolderKeyPair().publicKey, failureDomain: `aws/${sb.site}/r1` };
    },
  };
  const enlistment = new StandbyEnlistment(
    {
      config,
      launcher: opts.launcher === null ? undefined : (opts.launcher ?? launcher),
      counters,
      clock,
      controlState: () => follower.state,
      commit,
      port: {
        admit: async (a) => (await commit(() => ({ type: "admit_holder", ...a }))).seq,
        activate: async (t) => {
          await commit(() => ({ type: "prepare_transfer", transferId: t.transferId, obligationId: OB, fromHolder: t.fromHolder, toHolder: t.toHolder, ranges: t.ranges }));
          return (await commit(() => ({ type: "activate_replacement", transferId: t.transferId }))).seq;
        },
      },
      taken: () => new Set(opts.taken ?? []),
      nudge: () => {
        nudges++;
        settle();
        next = settled();
      },
    },
    2_000,
  );
  return { enlistment, follower, commit, counters, clock, started, nudges: () => nudges, done: () => next };
}

const admitStandby = (holderId: string): ControlEventBody => ({ type: "admit_holder", holderId, incarnation: 1, publicKey: generateHolderKeyPair().publicKey, failureDomain: "aws/s-vault/r1" });
const notEast = (site: string) => site !== "s-east";

test("a gap no admitted holder can take brings in the first unused standby where the scenario does not reach; it is admitted and responsible from the gap on", async (t) => {
  const w = await world();
  const done = w.done();
  w.enlistment.enlist("l0", RangeSet.of(6, 24), notEast);
  t.deepEqual([...w.enlistment.reserved], ["sb-vault"], "reserved while it starts: a failure repair must not take it");
  await done;
  t.deepEqual(w.started, ["sb-vault"], "sb-east sits where the scenario's losses reach");
  const s = w.follower.state;
  t.is(s.holders["sb-vault"]?.status, "active");
  const mine = s.obligations[OB]!.responsible["sb-vault"]!;
  t.true(mine.coversAll(RangeSet.of(6, OPEN_END)), mine.toString());
  t.false(mine.has(5));
  t.deepEqual(Object.values(s.transfers).map((x) => [x.fromHolder, x.ranges.toString()]).sort(), [["h1", RangeSet.of(25, OPEN_END).toString()], ["h2", RangeSet.of(6, 24).toString()]]);
  t.is(w.counters.get("coverage_enlisted"), 1);
  t.deepEqual([...w.enlistment.reserved], []);
});

test("while one standby is being enlisted no second one starts; the next gap takes the next unused standby", async (t) => {
  const w = await world();
  const done = w.done();
  w.enlistment.enlist("l0", RangeSet.of(6, 24), () => true);
  w.enlistment.enlist("l0", RangeSet.of(6, 24), () => true);
  await done;
  t.deepEqual(w.started, ["sb-east"]);
  const again = w.done();
  w.enlistment.enlist("l0", RangeSet.of(30, 31), () => true);
  await again;
  t.deepEqual(w.started, ["sb-east", "sb-vault"], "an admitted standby is never enlisted twice");
});

test("without a surviving unused standby, or without a launcher, nothing is started and the reason is counted", async (t) => {
  const taken = await world({ taken: ["sb-vault", "sb-late"] });
  taken.enlistment.enlist("l0", RangeSet.of(6, 24), notEast);
  t.deepEqual(taken.started, []);
  t.is(taken.counters.get("coverage_enlist_no_standby"), 1);
  t.is(taken.follower.state.holders["sb-vault"], undefined);
  const bare = await world({ launcher: null });
  bare.enlistment.enlist("l0", RangeSet.of(6, 24), () => true);
  t.is(bare.counters.get("coverage_enlist_unconfigured"), 1);
  t.is(Object.keys(bare.follower.state.holders).length, 2);
});

test("a standby that fails to start is counted, nothing is committed, and it is tried again only after retryMs", async (t) => {
  let calls = 0;
  const w = await world({
    launcher: {
      prepare: async () => {
        calls++;
        throw new Error("no capacity");
      },
    },
  });
  const done = w.done();
  w.enlistment.enlist("l0", RangeSet.of(6, 24), () => true);
  await done;
  t.is(w.counters.get("coverage_enlist_failed"), 1);
  t.is(w.follower.state.holders["sb-east"], undefined);
  w.enlistment.enlist("l0", RangeSet.of(6, 24), () => true);
  t.is(calls, 1, "within retryMs: not again");
  w.clock.advance(2_000);
  const retried = w.done();
  w.enlistment.enlist("l0", RangeSet.of(6, 24), () => true);
  await retried;
  t.is(calls, 2);
});

test("a standby its controller admitted but died before making responsible is made responsible by the next round; a transfer left prepared is activated, not prepared twice", async (t) => {
  const w = await world();
  // The dead controller's last commits: the admission, and one of the two transfers prepared only.
  await w.commit(() => admitStandby("sb-vault"));
  await w.commit(() => ({ type: "prepare_transfer", transferId: "enlist-sb-vault-l0-h2", obligationId: OB, fromHolder: "h2", toHolder: "sb-vault", ranges: RangeSet.of(6, 24) }));
  const done = w.done();
  w.enlistment.resume();
  await done;
  const s = w.follower.state;
  t.is(s.transfers["enlist-sb-vault-l0-h2"]?.status, "active");
  t.is(s.transfers["enlist-sb-vault-l0-h1"]?.status, "active");
  t.true(s.obligations[OB]!.responsible["sb-vault"]!.coversAll(RangeSet.of(6, OPEN_END)));
  t.is(w.counters.get("coverage_enlist_resumed"), 1);
  t.is(w.counters.get("coverage_enlist_failed"), 0);
  // Responsible now: later rounds leave it alone, and so do they a failure repair's replacement.
  w.enlistment.resume();
  t.is(w.counters.get("coverage_enlist_resumed"), 1);
  const other = await world({ taken: ["sb-vault"] });
  await other.commit(() => admitStandby("sb-vault"));
  other.enlistment.resume();
  t.is(other.counters.get("coverage_enlist_resumed"), 0);
});

test("a standby whose launch failed is passed over for ten retry intervals while another candidate remains; with none left it is tried again", async (t) => {
  const tried: string[] = [];
  const w = await world({
    launcher: {
      prepare: async (sb) => {
        tried.push(sb.holderId);
        if (sb.holderId !== "sb-late") throw new Error("its process is down");
        return { holderId: sb.holderId, incarnation: 1, publicKey: generateHolderKeyPair().publicKey, failureDomain: "aws/s-vault/r1" };
      },
    },
  });
  const attempt = async () => {
    w.clock.advance(2_000);
    const done = w.done();
    w.enlistment.enlist("l0", RangeSet.of(6, 24), notEast);
    await done;
  };
  await attempt();
  await attempt();
  t.deepEqual(tried, ["sb-vault", "sb-late"], "the down sb-vault does not hold up sb-late");
  t.is(w.follower.state.holders["sb-late"]?.status, "active");

  // Only sb-vault left (sb-late is admitted now): after its pass-over it is tried again, and then every retryMs.
  const only = await world({ launcher: { prepare: async (sb) => (tried.push(sb.holderId), Promise.reject(new Error("down"))) }, taken: ["sb-late"] });
  tried.length = 0;
  for (let i = 0; i < 3; i++) {
    only.clock.advance(2_000);
    const done = only.done();
    only.enlistment.enlist("l0", RangeSet.of(6, 24), notEast);
    await done;
  }
  t.deepEqual(tried, ["sb-vault", "sb-vault", "sb-vault"]);
});
