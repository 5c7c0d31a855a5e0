/**
 * `report.html` of a demo run (pure: result in, one self-contained HTML string out — inline CSS,
 * SVG and a little JS, no external fetch, so it opens offline): the custody graph of sites and
 * edges with the struck regions marked; a timeline of every holder's retained range, the writer's
 * acknowledged head, the strike, the surviving cut and the lost range in colours of their own; the
 * strike sequence by sequence per volume; predicted vs observed loss; every scenario's status;
 * the per-leg monthly transfer cost; and the capture lag per holder ("chasing the light").
 */
import { RangeSet } from "../lanes/index.ts";
import { survivingCutAt } from "./custody-timeline.ts";
import type { DemoResult } from "./demo-script.ts";
import type { Deployment } from "./deployment.ts";
import { esc, strikeZoomSvg } from "./report-strike.ts";
import { lostRange } from "./scenario-table.ts";
import { statusRows } from "./status-rows.ts";
import { deploymentOfVolume } from "./waypoint-variant.ts";

const CUT_COLOR = "#ea580c";
const struckRegions = (d: Deployment) => new Set([d.failures.first, d.failures.second]);
const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#dc2626", "#4b5563", "#db2777"];

/** The custody graph: regions as columns, sites as boxes (holders listed), custody legs as arrows. */
function graphSvg(r: DemoResult): string {
  const d = r.deployment;
  const lost = new Set([d.failures.first, d.failures.second]);
  const W = 920;
  const colW = W / d.regions.length;
  const pos = new Map<string, { x: number; y: number }>();
  const parts: string[] = [];
  d.regions.forEach((reg, i) => {
    const x0 = i * colW + 10;
    parts.push(`<rect x="${x0}" y="10" width="${colW - 20}" height="370" rx="10" class="region${lost.has(reg.name) ? " lost" : ""}"/>`);
    parts.push(`<text x="${x0 + 10}" y="32" class="rname">${esc(reg.name)}${lost.has(reg.name) ? " — lost" : ""}</text>`);
    d.sites
      .filter((s) => s.region === reg.name)
      .forEach((s, j) => {
        const x = x0 + 20;
        // Stagger the first site per region so custody arrows between regions do not overlap.
        const y = 50 + j * 85 + (i % 3) * 70;
        pos.set(s.id, { x: x + (colW - 60) / 2, y: y + 30 });
        const who = [...(d.writer.site === s.id ? [`writer ${d.writer.id}`] : []), ...d.holders.filter((h) => h.site === s.id).map((h) => `${h.id} (${h.role})`)];
        parts.push(`<g class="site" data-site="${esc(s.id)}"><rect x="${x}" y="${y}" width="${colW - 60}" height="60" rx="6"/>`);
        parts.push(`<text x="${x + 8}" y="${y + 18}" class="sname">${esc(s.id)} · ${esc(s.az)}</text>`);
        who.forEach((w, k) => parts.push(`<text x="${x + 8}" y="${y + 34 + k * 13}" class="who">${esc(w)}</text>`));
        parts.push(`</g>`);
      });
  });
  const siteOf = (id: string) => (id === d.writer.id ? d.writer.site : d.holders.find((h) => h.id === id)?.site);
  const legsOf = (x: Deployment): [string, string][] => [...x.writer.holders.map((h): [string, string] => [x.writer.id, h]), ...x.holders.flatMap((h) => h.downstream.map((y): [string, string] => [h.id, y]))];
  const legs = legsOf(d);
  const cmp = d.waypointComparison;
  // The comparison volume's own legs (those the waypoint volume does not use), dashed.
  const alt = cmp === undefined ? [] : legsOf(deploymentOfVolume(d, cmp.volume)).filter(([a, b]) => !legs.some(([x, y]) => x === a && y === b));
  for (const [a, b, only] of [...legs.map(([a, b]) => [a, b, ""]), ...alt.map(([a, b]) => [a, b, cmp!.volume])] as [string, string, string][]) {
    const sa = siteOf(a)!;
    const sb = siteOf(b)!;
    const p = pos.get(sa)!;
    const q = pos.get(sb)!;
    const e = d.edges.find((x) => (x.from === sa && x.to === sb) || (x.from === sb && x.to === sa));
    const label = e === undefined ? "local" : `${e.latencyMs} ms · $${e.pricePerGb}/GB`;
    // Leave and enter boxes at their sides (or bottom/top within one column), arcing between.
    const sameCol = Math.abs(p.x - q.x) < 1;
    const sx = sameCol ? p.x - 40 : p.x + Math.sign(q.x - p.x) * ((colW - 60) / 2);
    const sy = sameCol ? p.y + 30 * Math.sign(q.y - p.y) : p.y;
    const ex = sameCol ? q.x - 40 : q.x - Math.sign(q.x - p.x) * ((colW - 60) / 2);
    const ey = sameCol ? q.y - 30 * Math.sign(q.y - p.y) : q.y;
    const cx = sameCol ? sx - 30 : (sx + ex) / 2;
    const cy = sameCol ? (sy + ey) / 2 : Math.min(sy, ey) - 20 - Math.abs(ex - sx) * 0.08;
    parts.push(`<path class="edge${only ? " alt" : ""}" data-edge="${esc(a)}-${esc(b)}" d="M${sx},${sy} Q${cx},${cy} ${ex},${ey}" marker-end="url(#arrow)"/>`);
    // Within a column the label sits in the gap just above the target box.
    const lx = sameCol ? ex + 8 : (sx + 2 * cx + ex) / 4;
    const ly = sameCol ? ey - 6 : (sy + 2 * cy + ey) / 4 - 3;
    parts.push(`<text class="elabel" x="${lx}" y="${ly}" text-anchor="${sameCol ? "start" : "middle"}">${esc(a)}→${esc(b)} ${esc(label)}${only ? ` (${esc(only)} only)` : ""}</text>`);
  }
  return `<svg id="custody-graph" viewBox="0 0 ${W} 390" role="img" aria-label="custody graph"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#334155"/></marker></defs>${parts.join("")}</svg>`;
}

/** Timeline of the first volume: retained ranges, acknowledged head, surviving cut, the strike and the lost range. */
function timelineSvg(r: DemoResult): string {
  const run = r.run;
  const d = r.deployment;
  const W = 920;
  const H = 360;
  const L = 60;
  const T = 20;
  const PW = W - L - 20;
  const PH = H - T - 40;
  const tMax = Math.max(1, ...run.samples.map((s) => s.tMs), ...run.events.map((e) => e.tMs));
  const tMin = Math.min(...run.samples.map((s) => s.tMs), ...run.events.map((e) => e.tMs));
  const first = run.outcomes.find((o) => o.volume === d.volume)!;
  const yMax = Math.max(1, first.acknowledged);
  const x = (t: number) => L + ((t - tMin) / Math.max(1, tMax - tMin)) * PW;
  const y = (seq: number) => T + PH - (seq / yMax) * PH;
  const parts: string[] = [`<rect x="${L}" y="${T}" width="${PW}" height="${PH}" class="plot"/>`];
  for (let k = 0; k <= 4; k++) {
    const s = Math.round((yMax * k) / 4);
    parts.push(`<text x="${L - 6}" y="${y(s) + 4}" class="axis" text-anchor="end">#${s}</text>`);
  }
  parts.push(`<text x="${L}" y="${H - 8}" class="axis">${(tMin / 1000).toFixed(1)} s</text><text x="${L + PW}" y="${H - 8}" class="axis" text-anchor="end">${(tMax / 1000).toFixed(1)} s</text>`);
  d.holders.forEach((h, i) => {
    const pts = run.samples.filter((s) => s.holders[h.id] !== undefined && s.holders[h.id]!.retained.length > 0);
    if (pts.length === 0) return;
    const hi = pts.map((s) => `${x(s.tMs)},${y(RangeSet.fromJSON(s.holders[h.id]!.retained).max ?? 0)}`);
    const lo = pts.map((s) => `${x(s.tMs)},${y((RangeSet.fromJSON(s.holders[h.id]!.retained).min ?? 1) - 1)}`).reverse();
    parts.push(`<polygon class="band" data-holder="${esc(h.id)}" points="${[...hi, ...lo].join(" ")}" fill="${PALETTE[i % PALETTE.length]}" fill-opacity="0.18" stroke="${PALETTE[i % PALETTE.length]}"><title>${esc(h.id)} retained range</title></polygon>`);
  });
  parts.push(`<polyline class="acked" points="${run.samples.map((s) => `${x(s.tMs)},${y(s.acked)}`).join(" ")}"><title>acknowledged head</title></polyline>`);
  // The cut that would survive the strike's scenario at each moment (from sampled holdings).
  const lostHolders = d.holders.filter((h) => struckRegions(d).has(d.sites.find((s) => s.id === h.site)!.region)).map((h) => h.id);
  const bases = d.holders.filter((h) => h.baseSnapshot).map((h) => ({ holder: h.id, cut: 0, fromMs: 0 }));
  const before = run.samples.filter((s) => s.tMs <= run.strikeMs);
  parts.push(`<polyline class="cut" data-scenario="${esc(run.scenario)}" points="${before.map((s) => `${x(s.tMs)},${y(survivingCutAt(s, { name: run.scenario, lostHolders }, bases))}`).join(" ")}" stroke="${CUT_COLOR}" stroke-dasharray="5,3"><title>cut that would survive '${esc(run.scenario)}' at that moment</title></polyline>`);
  // The strike, the surviving cut after it and the lost range, each in its own colour.
  const sx = x(run.strikeMs);
  parts.push(`<line class="strike" x1="${sx}" x2="${sx}" y1="${T}" y2="${T + PH}"><title>strike: ${esc(run.scenario)}</title></line><text class="strike-label" x="${sx - 4}" y="${T + 12}" text-anchor="end">strike</text>`);
  parts.push(`<line class="surviving-cut" x1="${sx}" x2="${L + PW}" y1="${y(first.recoveredCut)}" y2="${y(first.recoveredCut)}"><title>surviving cut #${first.recoveredCut}</title></line>`);
  if (first.lostSeqs > 0) {
    const top = y(first.acknowledged);
    parts.push(`<rect class="lost-range" data-volume="${esc(first.volume)}" x="${sx}" y="${top}" width="${L + PW - sx}" height="${Math.max(3, y(first.recoveredCut) - top)}"><title>lost ${esc(lostRange(first.recoveredCut, first.acknowledged))}</title></rect>`);
  }
  run.events.forEach((e, i) => {
    parts.push(`<line class="event" x1="${x(e.tMs)}" x2="${x(e.tMs)}" y1="${T}" y2="${T + PH}"><title>${esc(e.label)}</title></line><text class="elabel" x="${x(e.tMs) + 3}" y="${T + 12 + (i % 6) * 12}">${i + 1}</text>`);
  });
  return `<svg id="timeline" viewBox="0 0 ${W} ${H}" role="img" aria-label="timeline">${parts.join("")}</svg>`;
}

function table(id: string, head: string[], rows: (string | number)[][]): string {
  return `<table id="${id}"><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("")}</tbody></table>`;
}

/** The whole report. */
export function renderReport(r: DemoResult): string {
  const d = r.deployment;
  const run = r.run;
  const byteExact = r.scenarios.every((s) => s.byte_exact);
  const ok = r.mismatches === 0 && byteExact;
  const strike = table(
    "scenario-table",
    ["scenario", "volume", "custody path", "acknowledged", "predicted cut", "recovered cut", "predicted loss", "observed loss", "match", "cut at the strike (receipts in flight)"],
    run.outcomes.map((o) => [run.scenario, o.volume, o.path, `#${o.acknowledged}`, o.predictedCut ?? "nothing", o.recoveredCut, lostRange(o.predictedCut, o.acknowledged), lostRange(o.recoveredCut, o.acknowledged), o.predictedCut === o.recoveredCut ? "exact" : "MISMATCH", o.cutAtStrike ?? "nothing"]),
  );
  const status = table(
    "status-table",
    ["scenario", "required", "predicted cut", "recovered cut", "lost range", "RPO seqs", "RPO bytes", "RPO age ms", "RTO estimate s", "RTO measured s", "contributors"],
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
  const cost = table(
    "cost-table",
    ["leg", "$/GB", "measured rate kB/s", "monthly $ (30 d)"],
    [...r.legs.map((l) => [`${l.from} → ${l.to}`, l.usdPerGb.toFixed(3), (l.bytesPerSec / 1000).toFixed(1), l.monthlyUsd.toFixed(2)]), ["total", "", "", r.legs.reduce((n, l) => n + l.monthlyUsd, 0).toFixed(2)]],
  );
  const lag = table("capture-lag", ["holder", "median capture lag after the first copy (ms)"], Object.entries(r.captureLagMs).sort(([, a], [, b]) => a - b).map(([h, ms]) => [h, ms.toFixed(1)]));
  const events = `<ol id="events">${run.events.map((e) => `<li><b>${(e.tMs / 1000).toFixed(1)} s</b> ${esc(e.label)}</li>`).join("")}</ol>`;
  const legend = [
    ...d.holders.map((h, i) => `<span><i style="background:${PALETTE[i % PALETTE.length]}"></i>${esc(h.id)} retained</span>`),
    `<span><i class="l-acked"></i>acknowledged head</span>`,
    `<span><i style="background:${CUT_COLOR}"></i>cut that would survive the strike</span>`,
    `<span><i class="l-strike"></i>strike</span>`,
    `<span><i class="l-surviving"></i>surviving cut</span>`,
    `<span><i class="l-lost"></i>lost range</span>`,
  ].join(" ");
  const w = r.waypointLoss;
  const worth = w === null ? "" : `<p id="waypoint-worth">Same strike, same write stream, at the same time: with the waypoint ${esc(d.volume)} lost ${w.withWaypoint} acknowledged sequences; without it ${esc(d.waypointComparison!.volume)} lost ${w.withoutWaypoint}.</p>`;
  const data = JSON.stringify({ scenarios: r.scenarios.length, losing: r.losingScenarios, mismatches: r.mismatches, events: run.events.length }).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Custody demo report — ${esc(d.volume)}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#0f172a;max-width:960px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}h3{font-size:14px;margin:14px 0 4px}
.verdict{padding:8px 12px;border-radius:6px;display:inline-block;font-weight:600}
.ok{background:#dcfce7;color:#166534}.bad{background:#fee2e2;color:#991b1b}
svg{width:100%;height:auto;background:#fff;border:1px solid #e2e8f0;border-radius:8px}
.region{fill:#f8fafc;stroke:#94a3b8}.region.lost{fill:#fef2f2;stroke:#dc2626;stroke-dasharray:6 4}
.rname{font-weight:700;font-size:13px}.site rect{fill:#fff;stroke:#475569}.sname{font-size:11px;font-weight:600}.who{font-size:10px;fill:#334155}
.edge{fill:none;stroke:#334155;stroke-width:1.4}.edge.alt{stroke:#7c3aed;stroke-dasharray:5 3}.elabel{font-size:9px;fill:#475569;paint-order:stroke;stroke:#fff;stroke-width:3px}
.plot{fill:#fff;stroke:#cbd5e1}.axis{font-size:10px;fill:#64748b}
.acked{fill:none;stroke:#0f172a;stroke-width:2}.cut{fill:none;stroke-width:1.8}.event{stroke:#f59e0b;stroke-width:1}
.strike{stroke:#b91c1c;stroke-width:3}.strike-label{font-size:11px;font-weight:700;fill:#b91c1c}
.surviving-cut{stroke:#059669;stroke-width:2.5}.lost-range{fill:#e11d48;fill-opacity:.75;stroke:#9f1239}
.zoom .held{fill:#93c5fd}.zoom .acked-cell{fill:#cbd5e1}.zoom .kept{fill:#059669}.zoom .row{font-size:10px;fill:#334155}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border:1px solid #e2e8f0;padding:4px 8px;text-align:left}th{background:#f1f5f9}
.legend span{margin-right:12px;font-size:12px;white-space:nowrap}.legend i{display:inline-block;width:12px;height:8px;margin-right:4px;vertical-align:middle}
.l-acked{background:#0f172a}.l-strike{background:#b91c1c}.l-surviving{background:#059669}.l-lost{background:#e11d48}
</style></head><body>
<h1>Custody demo — ${run.outcomes.map((o) => esc(o.volume)).join(", ")}, lane ${esc(d.lane)}</h1>
<p>Run <code>${esc(r.runDir)}</code>, ${r.elapsedSec.toFixed(1)} s, ${run.writes} writes (${run.writeMBps.toFixed(2)} MB/s) before the strike, ${r.startedPids.length} processes started, ${r.leftPids.length} left running.</p>
<p class="verdict ${ok ? "ok" : "bad"}" id="verdict">Strike '${esc(run.scenario)}': ${r.losingScenarios} of ${r.scenarios.length} volumes lost acknowledged writes; ${r.mismatches === 0 ? "every recovered cut equals its prediction" : `${r.mismatches} recovered cuts DIFFER from the prediction`}; ${byteExact ? "byte-exact" : "NOT byte-exact"} vs the writes</p>
${worth}
<h2>Custody graph</h2>
${graphSvg(r)}
<h2>Timeline of ${esc(d.volume)}: retained ranges, the strike, the surviving cut and the lost range</h2>
<div class="legend">${legend}</div>
${timelineSvg(r)}
${events}
<h2>At the strike, sequence by sequence</h2>
${run.outcomes.map((o) => strikeZoomSvg(run, o)).join("\n")}
<h2>Predicted vs observed loss</h2>
${strike}
<h2>Every scenario of ${esc(d.volume)} (from the survivors' receipts)</h2>
${status}
<h2>Monthly transfer cost per leg</h2>
${cost}
<h2>Chasing the light</h2>
${lag}
<p id="summary"></p>
<script>
// Runs offline: a one-line summary from the embedded numbers, and a check that every lost range is drawn.
const data = ${data};
const lost = [...document.querySelectorAll(".lost-range")];
document.body.dataset.lostShown = String(lost.filter((e) => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; }).length);
document.getElementById("summary").textContent = data.scenarios + " volumes struck, " + data.losing + " lost acknowledged writes, " + data.mismatches + " differ from the prediction; " + data.events + " timeline events.";
document.body.dataset.rendered = "yes";
</script>
</body></html>
`;
}
