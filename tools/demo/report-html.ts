/**
 * `report.html` of a demo run (pure: the saved result in, one self-contained HTML string out —
 * inline CSS, SVG and a little JS, no external fetch, so it opens offline): the custody graph
 * (report-graph.ts), the timeline of the first volume (report-timeline.ts), the strike sequence by
 * sequence per volume (report-strike.ts), predicted vs observed loss, every scenario's status, each
 * volume's legs priced at the rate each carried, and each holder's capture lag with its reason.
 * Figures use the page's whole width; each figure's legend sits with it in one <figure>.
 */
import { captureLagRows, carriedInto, formatLag } from "./capture-lag.ts";
import { graphSvg, GRAPH_COLOURS } from "./report-graph.ts";
import type { ReportInput } from "./report-input.ts";
import { esc, strikeZoomSvg } from "./report-strike.ts";
import { TIMELINE_COLOURS } from "./report-timeline.ts";
import { timelineSvg } from "./report-timeline.ts";
import { lostRange } from "./scenario-table.ts";
import { statusRows } from "./status-rows.ts";

function table(id: string, head: string[], rows: (string | number)[][]): string {
  const th = head.map((h) => `<th>${esc(h)}</th>`).join("");
  const trs = rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("");
  return `<table id="${id}"><thead><tr>${th}</tr></thead><tbody>${trs}</tbody></table>`;
}

/** Predicted vs observed loss: one row per volume struck. */
function strikeTable(run: ReportInput["run"]): string {
  return table(
    "scenario-table",
    [
      "scenario",
      "volume",
      "custody path",
      "acknowledged",
      "predicted cut",
      "recovered cut",
      "predicted loss",
      "observed loss",
      "match",
      "cut at the strike (receipts in flight)",
    ],
    run.outcomes.map((o) => [
      run.scenario,
      o.volume,
      o.path,
      `#${o.acknowledged}`,
      o.predictedCut ?? "nothing",
      o.recoveredCut,
      lostRange(o.predictedCut, o.acknowledged),
      lostRange(o.recoveredCut, o.acknowledged),
      o.predictedCut === o.recoveredCut ? "exact" : "MISMATCH",
      o.cutAtStrike ?? "nothing",
    ]),
  );
}

/** Every scenario of the first volume, as the survivors' receipts evaluate it. */
function statusTable(run: ReportInput["run"]): string {
  return table(
    "status-table",
    [
      "scenario",
      "required",
      "predicted cut",
      "recovered cut",
      "lost range",
      "RPO seqs",
      "RPO bytes",
      "RPO age ms",
      "RTO estimate s",
      "RTO measured s",
      "contributors",
    ],
    statusRows(run).map((x) => [
      x.scenario,
      x.required ? "yes" : "no",
      x.predictedCut ?? "nothing",
      x.observedCut === undefined ? "(not played)" : (x.observedCut ?? "nothing"),
      x.lostRange,
      x.rpoSeqs,
      x.rpoBytes,
      Math.round(x.rpoAgeMs),
      x.rtoEstimateSec === null ? "unbounded" : x.rtoEstimateSec.toFixed(2),
      x.rtoMeasuredSec === undefined ? "-" : x.rtoMeasuredSec.toFixed(2),
      x.contributors.join(", "),
    ]),
  );
}

/** Each volume's legs at the rate each carried while the writers streamed, and its total. */
function costTable(r: ReportInput, volumes: readonly string[]): string {
  const run = r.run;
  const costRows: (string | number)[][] = [];
  for (const v of volumes) {
    const legs = r.legs.filter((l) => l.volume === v);
    const stream = (run.writeMBpsByVolume[v] ?? 0) * 1e6;
    for (const l of legs)
      costRows.push([
        v,
        `${(l.senders ?? []).join(", ")} → ${l.receiver ?? ""}`,
        `${l.from} → ${l.to}`,
        l.usdPerGb.toFixed(3),
        (l.bytesPerSec / 1000).toFixed(1),
        stream > 0 ? `${Math.round((100 * l.bytesPerSec) / stream)}%` : "-",
        l.monthlyUsd.toFixed(2),
      ]);
    costRows.push([v, "all its legs", "", "", "", "", legs.reduce((n, l) => n + l.monthlyUsd, 0).toFixed(2)]);
  }
  costRows.push(["total", "", "", "", "", "", r.legs.reduce((n, l) => n + l.monthlyUsd, 0).toFixed(2)]);
  return table(
    "cost-table",
    ["volume", "leg", "sites", "$/GB", "carried while streaming kB/s", "of the volume's stream", "monthly $ (30 d)"],
    costRows,
  );
}

/** Each holder's capture lag of the first volume, with its reason. */
function lagTable(r: ReportInput): string {
  const d = r.deployment;
  const firstStream = (r.run.writeMBpsByVolume[d.volume] ?? 0) * 1e6;
  return table(
    "capture-lag",
    ["holder", "median capture lag", "why"],
    captureLagRows(d, r.captureLagMs, firstStream, carriedInto(r.legs, d.volume)).map((x) => [
      x.holder,
      formatLag(x.ms),
      x.why,
    ]),
  );
}

/** The run's events in order, each at its time since the start. */
function eventList(run: ReportInput["run"]): string {
  const items = run.events.map((e) => `<li><b>${(e.tMs / 1000).toFixed(1)} s</b> ${esc(e.label)}</li>`);
  return `<ol id="events">${items.join("")}</ol>`;
}

/** What the waypoint saved: the same strike on a volume with it and one without (empty without a comparison). */
function waypointWorth(r: ReportInput): string {
  const w = r.waypointLoss;
  const d = r.deployment;
  if (w === null) return "";
  return (
    `<p id="waypoint-worth">Same strike, same write stream, at the same time: ` +
    `with the waypoint ${esc(d.volume)} lost ${w.withWaypoint} acknowledged sequences; ` +
    `without it ${esc(d.waypointComparison!.volume)} lost ${w.withoutWaypoint}.</p>`
  );
}

/** The page's style sheet; the figures' colours come from the modules that draw them. */
function reportCss(): string {
  const C = TIMELINE_COLOURS;
  const G = GRAPH_COLOURS;
  return `body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#0f172a;max-width:1600px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}h3{font-size:14px;margin:14px 0 4px}
figure{margin:0}figcaption,.note{font-size:12px;color:#475569;margin:4px 0}
.verdict{padding:8px 12px;border-radius:6px;display:inline-block;font-weight:600}
.ok{background:#dcfce7;color:#166534}.bad{background:#fee2e2;color:#991b1b}
svg{display:block;width:100%;height:auto;background:#fff;border:1px solid #e2e8f0;border-radius:8px}
.site rect,.node rect{fill:#fff;stroke:#475569}
.site.struck rect,.node.struck rect{fill:#f5f3ff;stroke:${G.struck};stroke-dasharray:6 4}
.sname{font-size:12px;font-weight:700}.who{font-size:10.5px;fill:#334155}.struck-note{fill:${G.struck}}
.colhead{font-size:11px;font-weight:700;fill:#64748b}
.edge{fill:none;stroke:${G.leg};stroke-width:1.4}.edge.alt{stroke:${G.only};stroke-dasharray:5 3}
.elabel{font-size:10px;fill:#334155}
.plot{fill:#fff;stroke:#cbd5e1}.axis,.rowname,.marker{font-size:10.5px;fill:#475569}.marker{font-weight:700}
.grid{stroke:#eef2f6;stroke-width:1}
.acked{fill:none;stroke-width:2}.cut{fill:none;stroke-width:1.8}.event{stroke-width:1;stroke-dasharray:2 3}
.strike{stroke-width:3}.strike-row{stroke-width:2}.strike-label{font-size:11px;font-weight:700}
.surviving-cut{stroke-width:2.5}
.zoom .held{fill:${C.retained}}.zoom .acked-cell{fill:#cbd5e1}.zoom .kept{fill:${C.surviving}}
.zoom .lost-range{fill:${C.lost}}.zoom .row{font-size:10px;fill:#334155}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border:1px solid #e2e8f0;padding:4px 8px;text-align:left}th{background:#f1f5f9}
.legend{margin:4px 0}.legend span{margin-right:14px;font-size:12px;white-space:nowrap}
.legend i{display:inline-block;width:14px;height:9px;margin-right:4px;vertical-align:middle}`;
}

/** The run in one line, and the verdict: did every recovery match its prediction, byte for byte. */
function runHeadline(r: ReportInput): string {
  const run = r.run;
  const byteExact = r.scenarios.every((s) => s.byte_exact);
  const ok = r.mismatches === 0 && byteExact;
  const matched =
    r.mismatches === 0
      ? "every recovered cut equals its prediction"
      : `${r.mismatches} recovered cuts DIFFER from the prediction`;
  return `<p>Run <code>${esc(r.runDir)}</code>, ${r.elapsedSec.toFixed(1)} s, ${run.writes} writes
(${run.writeMBps.toFixed(2)} MB/s) before the strike, ${r.startedPids.length} processes started,
${r.leftPids.length} left running.</p>
<p class="verdict ${ok ? "ok" : "bad"}" id="verdict">Strike '${esc(run.scenario)}':
${r.losingScenarios} of ${r.scenarios.length} volumes lost acknowledged writes; ${matched};
${byteExact ? "byte-exact" : "NOT byte-exact"} vs the writes</p>`;
}

/**
 * The page's script (runs offline): a one-line summary from the embedded numbers, and a check
 * that every lost range is drawn.
 */
function summaryScript(r: ReportInput): string {
  const data = JSON.stringify({
    scenarios: r.scenarios.length,
    losing: r.losingScenarios,
    mismatches: r.mismatches,
    events: r.run.events.length,
  }).replace(/</g, "\\u003c");
  return `<script>
// Runs offline: a one-line summary from the embedded numbers, and a check that every lost range is drawn.
const data = ${data};
const lost = [...document.querySelectorAll(".lost-range")];
document.body.dataset.lostShown = String(lost.filter((e) => {
  const b = e.getBoundingClientRect();
  return b.width > 0 && b.height > 0;
}).length);
document.getElementById("summary").textContent = data.scenarios + " volumes struck, " + data.losing
  + " lost acknowledged writes, " + data.mismatches + " differ from the prediction; " + data.events
  + " timeline events.";
document.body.dataset.rendered = "yes";
</script>`;
}

/** The whole report. */
export function renderReport(r: ReportInput): string {
  const d = r.deployment;
  const run = r.run;
  const volumes = run.outcomes.map((o) => o.volume);
  const graph = graphSvg(d, volumes);
  const timeline = timelineSvg(r);
  const timelineNotes = timeline.notes.map((n) => `<p class="note">${n}</p>`).join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Custody demo report — ${esc(d.volume)}</title>
<style>
${reportCss()}
</style></head><body>
<h1>Custody demo — ${volumes.map(esc).join(", ")}, lane ${esc(d.lane)}</h1>
${runHeadline(r)}
${waypointWorth(r)}
<h2>Custody graph</h2>
<figure>${graph.svg}<div class="legend">${graph.legend}</div></figure>
<h2>Timeline of ${esc(d.volume)}: what the writer acknowledged, what would survive, what did</h2>
<figure><div class="legend">${timeline.legend}</div>${timeline.svg}${timelineNotes}</figure>
${eventList(run)}
<h2>At the strike, sequence by sequence</h2>
${run.outcomes.map((o) => strikeZoomSvg(run, o)).join("\n")}
<h2>Predicted vs observed loss</h2>
${strikeTable(run)}
<h2>Every scenario of ${esc(d.volume)} (from the survivors' receipts)</h2>
${statusTable(run)}
<h2>Monthly transfer cost, per volume and leg</h2>
<p class="note">Each leg priced at the rate it carried while the writers streamed (how far its receiving holder got);
a leg slower than the stream carries less of it.</p>
${costTable(r, volumes)}
<h2>Capture lag: how long after a unit's first copy each holder had it (${esc(d.volume)})</h2>
${lagTable(r)}
<p id="summary"></p>
${summaryScript(r)}
</body></html>
`;
}
