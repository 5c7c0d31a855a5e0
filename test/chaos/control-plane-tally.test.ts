/**
 * What the chaos run reports of its control plane (pure): failovers are stream-leader changes plus
 * lease-holder changes (first sightings and a holder's own new term are none), and unavailability
 * is the longest stretch between successful probes, an unfinished one counted to the end.
 */
import test from "ava";
import { ControlPlaneTally } from "../../tools/chaos/control-plane-tally.ts";

test("stream leader changes and lease holder changes add up to failovers; repeats and gaps in sightings are no change", (t) => {
  const c = new ControlPlaneTally();
  c.probe(0, true, "a");
  c.probe(250, true, "a");
  c.probe(500, false);
  c.probe(750, true, "b");
  c.probe(1_000, true, "b");
  c.leaseHolder(undefined);
  c.leaseHolder("ctl-east");
  c.leaseHolder("ctl-east"); // a restarted holder's own new term
  c.leaseHolder(undefined); // the log could not be read
  c.leaseHolder("ctl-west");
  t.is(c.leaderChanges, 1);
  t.is(c.holderChanges, 1);
  t.is(c.failovers, 2);
  t.is(c.streamLeader, "b");
  t.is(c.activeController, "ctl-west");
});

test("unavailability runs from the last success to the next; an answer naming no leader is a failure; an outage at the end counts to the end", (t) => {
  const c = new ControlPlaneTally();
  c.probe(1_000, true, "a");
  c.probe(1_250, true, "a");
  c.probe(1_500, false);
  c.probe(2_500, true, ""); // answered, but no leader elected: nothing can be committed
  c.probe(5_250, true, "b");
  t.is(c.maxUnavailableMs(5_300), 4_000);
  t.is(c.lastAnsweredMs, 5_250);
  c.probe(5_500, false);
  t.is(c.maxUnavailableMs(12_000), 6_750);
  const never = new ControlPlaneTally();
  never.probe(100, false);
  t.is(never.maxUnavailableMs(900), 800, "never answered: the whole watch");
});
