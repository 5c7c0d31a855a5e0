import test from "ava";
import fc from "fast-check";
import { evaluateState, parseEvaluationState, sharedRepairBandwidth, type EvaluationStateJson } from "../../policies/index.ts";

const site = (id: string, region: string, az: string) => ({ id, region, az, host: `host-${id}`, deps: [] });

/**
 * A writer in us-east, a RAM holder in another AZ and a European store (with the base). The
 * timeline loses the RAM holder's AZ, then the writer's region 60 s later; the RAM holder's copy
 * (1 MB) must be re-made at a replacement in Europe before that.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function stateJson(edit: (j: any) => void = () => {}): EvaluationStateJson {
  const j: any = {
    volume: "v1",
    asOfMs: 1_000_000,
    staleAfterMs: 60_000,
    source: { site: "s-w", lanes: { l0: 100 } },
    commits: [{ lane: "l0", first: 1, last: 100, committedAtMs: 999_000, bytesPerSeq: 10_000 }],
    sites: [site("s-w", "us-east", "use1-az1"), site("s-a", "us-east", "use1-az2"), site("s-eu", "eu", "euw1-a"), site("s-r", "eu", "euw1-b")],
    holders: [
      { id: "h-a", site: "s-a", claims: [{ lane: "l0", ranges: [[1, 100]], residency: "ram", evidence: { kind: "observed", atMs: 999_900 } }] },
      { id: "h-eu", site: "s-eu", claims: [{ lane: "l0", ranges: [[1, 100]], residency: "disk", evidence: { kind: "observed", atMs: 999_900 } }] },
    ],
    bases: [{ id: "b0", holder: "h-eu", cut: { l0: 0 }, bytes: 0 }],
    keyAuthorities: [{ id: "k", site: "s-eu" }],
    links: [
      { id: "w-a", from: "s-w", to: "s-a", bandwidthBytesPerSec: 125_000_000 },
      { id: "w-eu", from: "s-w", to: "s-eu", bandwidthBytesPerSec: 12_500_000 },
      { id: "eu-r", from: "s-eu", to: "s-r", bandwidthBytesPerSec: 1_000_000 },
    ],
    recovery: { destination: "s-eu", detectSec: 5, authorizeSec: 1, acquireCapacitySec: 2, persistSec: 1, validateSec: 1 },
    timelines: [
      {
        name: "AZ2 then US-East",
        minIntervalSec: 60,
        events: [
          { afterSec: 0, losses: [{ domain: "az:use1-az2", kind: "site_destruction" }] },
          { afterSec: 60, losses: [{ domain: "region:us-east", kind: "site_destruction" }] },
        ],
        deadlineSec: 3600,
        required: true,
        allowedLoss: { seqs: 100 },
        repair: { site: "s-r" },
      },
    ],
  };
  edit(j);
  return j;
}

const timelineReport = (j: EvaluationStateJson) => evaluateState(parseEvaluationState(j)).reports[0]!;

test("a repair that finishes before the next allowed failure keeps the timeline met", (t) => {
  const r = timelineReport(stateJson());
  t.is(r.verdict, "met", r.reasons.join("; "));
});

test("a repair slower than the interval to the next allowed failure makes the timeline NOT met, naming repair time against the window", (t) => {
  const r = timelineReport(stateJson((j) => (j.links[2].bandwidthBytesPerSec = 10_000)));
  t.is(r.verdict, "not_met");
  // 1 MB over 10 kB/s = 100 s, plus 10 s of fixed phases.
  t.true(r.reasons.includes("repair after step 1 takes 110.0 s (976.6 KiB over 9.8 KiB/s configured, shared with surviving traffic), next allowed failure in 60 s"), r.reasons.join("; "));
});

test("a measured bandwidth is named as measured in the reason", (t) => {
  const r = timelineReport(
    stateJson((j) => {
      j.links[2].bandwidthBytesPerSec = 10_000;
      j.links[2].measuredAgeMs = 1500;
    }),
  );
  t.true(r.reasons.some((x) => x.includes("9.8 KiB/s measured")), r.reasons.join("; "));
});

test("the survivors' steady load on a link is subtracted from the repair's bandwidth; a lost sender's load is not", (t) => {
  const loaded = timelineReport(stateJson((j) => (j.linkLoads = [{ link: "eu-r", fromSite: "s-eu", bytesPerSec: 990_000 }])));
  t.is(loaded.verdict, "not_met", "1 MB/s link with 0.99 MB/s of surviving traffic leaves 10 kB/s");
  const gone = timelineReport(stateJson((j) => (j.linkLoads = [{ link: "eu-r", fromSite: "s-a", bytesPerSec: 990_000 }])));
  t.is(gone.verdict, "met", gone.reasons.join("; "));
});

test("a repair site with no surviving path makes the repair unbounded", (t) => {
  const r = timelineReport(stateJson((j) => (j.links = j.links.slice(0, 2))));
  t.true(r.reasons.some((x) => x.startsWith("repair after step 1 is unbounded")), r.reasons.join("; "));
});

test("without a repair section a timeline is judged as before", (t) => {
  const r = timelineReport(
    stateJson((j) => {
      j.links[2].bandwidthBytesPerSec = 10_000;
      delete j.timelines[0].repair;
    }),
  );
  t.is(r.verdict, "met");
});

test("an unknown repair site or link-load link is refused naming the field", (t) => {
  t.throws(() => evaluateState(parseEvaluationState(stateJson((j) => (j.timelines[0].repair.site = "nowhere")))), { message: /timelines\[0\]\.repair\.site/ });
  t.throws(() => evaluateState(parseEvaluationState(stateJson((j) => (j.linkLoads = [{ link: "x", fromSite: "s-eu", bytesPerSec: 1 }])))), { message: /linkLoads\[0\]\.link/ });
});

test("shared repair bandwidth is never negative and never more than the link's, and only surviving senders' load counts", (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 1e9 }), fc.array(fc.record({ bytesPerSec: fc.nat({ max: 2e9 }), alive: fc.boolean() }), { maxLength: 8 }), (bw, ls) => {
      const link = { id: "l", from: "a", to: "b", bandwidthBytesPerSec: bw, deps: [] };
      const loads = ls.map((l, i) => ({ link: "l", fromSite: `${l.alive ? "alive" : "dead"}-${i}`, bytesPerSec: l.bytesPerSec }));
      const got = sharedRepairBandwidth(link, loads, (s) => s.startsWith("alive"));
      const alive = ls.filter((l) => l.alive).reduce((a, l) => a + l.bytesPerSec, 0);
      t.is(got, Math.max(0, bw - alive));
      t.true(got >= 0 && got <= bw);
    }),
  );
});
