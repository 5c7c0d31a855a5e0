/**
 * What the report's timeline and lag table say (issue #47): a holder whose stats missed a sampling
 * round is not drawn as holding nothing (the "would survive" line dipped to #0 there), a struck
 * holder is not brought back after the strike, and a capture lag says why in a phrase.
 */
import test from "ava";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { captureLagRows } from "../../tools/demo/capture-lag.ts";
import type { TimelineSample } from "../../tools/demo/custody-timeline.ts";
import { loadDeployment } from "../../tools/demo/deployment.ts";
import { filledSamples, niceStep, wouldSurviveSeries } from "../../tools/demo/report-timeline.ts";

const d = loadDeployment(join(fileURLToPath(new URL("../..", import.meta.url)), "examples", "deployment.json"));
const held = (last: number) => ({ retained: [[1, last]] as [number, number][], bytes: last * 65536 });

test("a survivor missing from one sample keeps its previous holding: the would-survive cut does not drop to #0", (t) => {
  // h-wp and h-eu survive 'us-east and us-west lost'; h-wp misses the third round.
  const samples: TimelineSample[] = [
    { tMs: 1000, acked: 20, holders: { "h-eu": held(5) } },
    { tMs: 2000, acked: 40, holders: { "h-wp": held(30), "h-eu": held(10) } },
    { tMs: 3000, acked: 60, holders: { "h-eu": held(15) } },
    { tMs: 4000, acked: 80, holders: { "h-wp": held(70), "h-eu": held(20) } },
  ];
  const raw = wouldSurviveSeries(samples, 5000, d);
  t.is(raw[2]!.cut, null, "unfilled, the round without h-wp is unknown, not #0");
  const { samples: filled, filled: counts } = filledSamples({ samples, strikeMs: 5000 }, d);
  const series = wouldSurviveSeries(filled, 5000, d);
  t.deepEqual(series.map((p) => p.cut), [null, 30, 30, 70]);
  t.deepEqual(series[0]!.missing, ["h-wp"], "before its first answer the line has a gap, with who is missing");
  t.deepEqual(counts, { "h-wp": 1 });
});

test("a struck holder is not filled in after the strike; a survivor is", (t) => {
  const samples: TimelineSample[] = [
    { tMs: 1000, acked: 10, holders: { "h-e1": held(10), "h-wp": held(10), "h-eu": held(2) } },
    { tMs: 3000, acked: 10, holders: { "h-eu": held(4) } },
  ];
  const { samples: filled } = filledSamples({ samples, strikeMs: 2000 }, d);
  t.is(filled[1]!.holders["h-e1"], undefined, "h-e1 (us-east) is gone after the strike");
  t.deepEqual(filled[1]!.holders["h-wp"], held(10));
});

test("capture lag: a leg that carried less than the stream queues; one that kept up names its latency", (t) => {
  const rows = captureLagRows(d, { "h-wp": 40, "h-eu": 10_200, "h-e1": null }, 600_000, { "h-wp": 600_000, "h-eu": 300_000 });
  const why = Object.fromEntries(rows.map((r) => [r.holder, r.why]));
  t.regex(why["h-eu"]!, /^queues: its leg s-wp → s-eu carried 300 kB\/s of the 600 kB\/s stream \(declared 0\.5 MB\/s\)$/);
  t.regex(why["h-wp"]!, /^kept up: its leg s-w → s-wp \(6 ms one way\)/);
  t.is(why["h-e1"], "captured nothing of this volume");
  t.deepEqual(rows.map((r) => r.holder).slice(0, 2), ["h-wp", "h-eu"], "fastest first");
});

test("axis steps are 1, 2 or 5 times a power of ten", (t) => {
  t.is(niceStep(629, 5), 200);
  t.is(niceStep(17, 5), 5);
  t.is(niceStep(0.9, 4), 0.5);
});
