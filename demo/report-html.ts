/**
 * `report.html` of a demo run (pure: result in, one self-contained HTML string out — inline CSS,
 * SVG and a little JS, no external fetch, so it opens offline): the custody graph of sites and
 * edges with the lost regions marked; a timeline of every holder's retained range, the writer's
 * acknowledged head and each scenario's surviving cut through the failures; the scenario table;
 * the per-leg monthly transfer cost; and the capture lag per holder ("chasing the light").
 */
import { RangeSet } from "../lanes/range-set.ts";
import { survivingCutAt } from "./custody-timeline.ts";
import type { DemoResult } from "./demo-script.ts";

const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
const CUT_COLORS = ["#dc2626", "#ea580c", "#7c2d12"];
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
  const legs: [string, string][] = [...d.writer.holders.map((h): [string, string] => [d.writer.id, h]), ...d.holders.flatMap((h) => h.downstream.map((x): [string, string] => [h.id, x]))];
  for (const [a, b] of legs) {
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
    parts.push(`<path class="edge" data-edge="${esc(a)}-${esc(b)}" d="M${sx},${sy} Q${cx},${cy} ${ex},${ey}" marker-end="url(#arrow)"/>`);
    // Within a column the label sits in the gap just above the target box.
    const lx = sameCol ? ex + 8 : (sx + 2 * cx + ex) / 4;
    const ly = sameCol ? ey - 6 : (sy + 2 * cy + ey) / 4 - 3;
    parts.push(`<text class="elabel" x="${lx}" y="${ly}" text-anchor="${sameCol ? "start" : "middle"}">${esc(a)}→${esc(b)} ${esc(label)}</text>`);
  }
  return `<svg id="custody-graph" viewBox="0 0 ${W} 390" role="img" aria-label="custody graph"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#334155"/></marker></defs>${parts.join("")}</svg>`;
}

/** Timeline: holder retained ranges as bands, acknowledged head, surviving cut per scenario, events. */
function timelineSvg(r: DemoResult): string {
  const W = 920;
  const H = 360;
  const L = 60;
  const T = 20;
  const PW = W - L - 20;
  const PH = H - T - 40;
  const tMax = Math.max(1, ...r.samples.map((s) => s.tMs), ...r.events.map((e) => e.tMs));
  const tMin = Math.min(...r.samples.map((s) => s.tMs), ...r.events.map((e) => e.tMs));
  const yMax = Math.max(1, r.acknowledged);
  const x = (t: number) => L + ((t - tMin) / Math.max(1, tMax - tMin)) * PW;
  const y = (seq: number) => T + PH - (seq / yMax) * PH;
  const parts: string[] = [`<rect x="${L}" y="${T}" width="${PW}" height="${PH}" class="plot"/>`];
  for (let k = 0; k <= 4; k++) {
    const s = Math.round((yMax * k) / 4);
    parts.push(`<text x="${L - 6}" y="${y(s) + 4}" class="axis" text-anchor="end">#${s}</text>`);
  }
  parts.push(`<text x="${L}" y="${H - 8}" class="axis">${(tMin / 1000).toFixed(1)} s</text><text x="${L + PW}" y="${H - 8}" class="axis" text-anchor="end">${(tMax / 1000).toFixed(1)} s</text>`);
  const holders = r.deployment.holders.map((h) => h.id);
  holders.forEach((h, i) => {
    const pts = r.samples.filter((s) => s.holders[h] !== undefined && s.holders[h]!.retained.length > 0);
    if (pts.length === 0) return;
    const hi = pts.map((s) => `${x(s.tMs)},${y(RangeSet.fromJSON(s.holders[h]!.retained).max ?? 0)}`);
    const lo = pts.map((s) => `${x(s.tMs)},${y((RangeSet.fromJSON(s.holders[h]!.retained).min ?? 1) - 1)}`).reverse();
    parts.push(`<polygon class="band" data-holder="${esc(h)}" points="${[...hi, ...lo].join(" ")}" fill="${PALETTE[i % PALETTE.length]}" fill-opacity="0.18" stroke="${PALETTE[i % PALETTE.length]}"><title>${esc(h)} retained range</title></polygon>`);
  });
  parts.push(`<polyline class="acked" points="${r.samples.map((s) => `${x(s.tMs)},${y(s.acked)}`).join(" ")}"><title>acknowledged head</title></polyline>`);
  r.timelineScenarios.forEach((sc, i) => {
    const pts = r.samples.map((s) => `${x(s.tMs)},${y(survivingCutAt(s, sc, r.bases))}`);
    parts.push(`<polyline class="cut" data-scenario="${esc(sc.name)}" points="${pts.join(" ")}" stroke="${CUT_COLORS[i % CUT_COLORS.length]}" stroke-dasharray="${4 + i * 3},3"><title>surviving cut: ${esc(sc.name)}</title></polyline>`);
  });
  r.events.forEach((e, i) => {
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
  const ok = r.predictedBothCut === r.recovered.cut && r.recovered.byteExact;
  const scen = table(
    "scenario-table",
    ["scenario", "required", "predicted cut", "recovered cut", "lost range", "RPO seqs", "RPO bytes", "RPO age ms", "RTO estimate s", "RTO measured s", "contributors"],
    r.rows.map((x) => [
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
  const events = `<ol id="events">${r.events.map((e) => `<li><b>${(e.tMs / 1000).toFixed(1)} s</b> ${esc(e.label)}</li>`).join("")}</ol>`;
  const legend = [
    ...d.holders.map((h, i) => `<span><i style="background:${PALETTE[i % PALETTE.length]}"></i>${esc(h.id)} retained</span>`),
    `<span><i class="l-acked"></i>acknowledged head</span>`,
    ...r.timelineScenarios.map((s, i) => `<span><i style="background:${CUT_COLORS[i % CUT_COLORS.length]}"></i>surviving cut: ${esc(s.name)}</span>`),
  ].join(" ");
  const data = JSON.stringify({ acknowledged: r.acknowledged, recovered: r.recovered.cut, predicted: r.predictedBothCut, events: r.events.length }).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Custody demo report — ${esc(d.volume)}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#0f172a;max-width:960px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.verdict{padding:8px 12px;border-radius:6px;display:inline-block;font-weight:600}
.ok{background:#dcfce7;color:#166534}.bad{background:#fee2e2;color:#991b1b}
svg{width:100%;height:auto;background:#fff;border:1px solid #e2e8f0;border-radius:8px}
.region{fill:#f8fafc;stroke:#94a3b8}.region.lost{fill:#fef2f2;stroke:#dc2626;stroke-dasharray:6 4}
.rname{font-weight:700;font-size:13px}.site rect{fill:#fff;stroke:#475569}.sname{font-size:11px;font-weight:600}.who{font-size:10px;fill:#334155}
.edge{fill:none;stroke:#334155;stroke-width:1.4}.elabel{font-size:9px;fill:#475569;paint-order:stroke;stroke:#fff;stroke-width:3px}
.plot{fill:#fff;stroke:#cbd5e1}.axis{font-size:10px;fill:#64748b}
.acked{fill:none;stroke:#0f172a;stroke-width:2}.cut{fill:none;stroke-width:1.8}.event{stroke:#f59e0b;stroke-width:1}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border:1px solid #e2e8f0;padding:4px 8px;text-align:left}th{background:#f1f5f9}
.legend span{margin-right:12px;font-size:12px;white-space:nowrap}.legend i{display:inline-block;width:12px;height:8px;margin-right:4px;vertical-align:middle}
.l-acked{background:#0f172a}.l-cut{background:#dc2626}
</style></head><body>
<h1>Custody demo — volume ${esc(d.volume)}, lane ${esc(d.lane)}</h1>
<p>Run <code>${esc(r.runDir)}</code>, ${r.elapsedSec.toFixed(1)} s, ${r.startedPids.length} processes started, ${r.leftPids.length} left running.</p>
<p class="verdict ${ok ? "ok" : "bad"}" id="verdict">Recovered at ${esc(d.recoverAt)} through #${r.recovered.cut} (prediction #${r.predictedBothCut ?? "nothing"}), ${r.recovered.byteExact ? "byte-exact" : "NOT byte-exact"} vs the writer</p>
<h2>Custody graph</h2>
${graphSvg(r)}
<h2>Timeline: retained ranges and surviving cuts through the failures</h2>
<div class="legend">${legend}</div>
${timelineSvg(r)}
${events}
<h2>Scenarios</h2>
${scen}
<h2>Monthly transfer cost per leg</h2>
${cost}
<h2>Chasing the light</h2>
${lag}
<p id="summary"></p>
<script>
// Runs offline: a one-line summary computed from the embedded numbers.
const data = ${data};
const gap = data.acknowledged - (data.recovered ?? 0);
document.getElementById("summary").textContent = "Acknowledged through #" + data.acknowledged + "; recovered through #" + data.recovered + " (" + (gap <= 0 ? "no acknowledged write lost" : gap + " acknowledged sequences lost") + "); " + data.events + " timeline events.";
document.body.dataset.rendered = "yes";
</script>
</body></html>
`;
}
