/**
 * The timeline of report.html for the first volume (pure SVG). The main plot holds the writer's
 * acknowledged head, the cut that would survive the strike's scenario at each moment, the strike,
 * the surviving cut and the lost range; below it one row per holder shows the range it retained,
 * each in its own frame (so no two fills ever blend); then the time axis and numbered event
 * markers (events closer than a marker's width share one). Every line stays inside its frame.
 * A holder whose stats missed a sampling round keeps its previous answer there (an unknown holding
 * is not a cut of 0); before its first answer the "would survive" line has a gap. Notes say both.
 */
import { RangeSet } from "../../lanes/index.ts";
import { survivingCutAt, type TimelineSample } from "./custody-timeline.ts";
import type { Deployment } from "./deployment.ts";
import type { ReportInput } from "./report-input.ts";
import { esc } from "./report-strike.ts";
import { lostRange } from "./scenario-table.ts";

/** One colour per meaning; the legend names each. */
export const TIMELINE_COLOURS = {
  acked: "#0f172a",
  retained: "#60a5fa",
  wouldSurvive: "#d97706",
  strike: "#7c3aed",
  surviving: "#059669",
  lost: "#e11d48",
  event: "#94a3b8",
} as const;

const W = 1280;
const L = 120;
const R = 24;
const PW = W - L - R;
/** Horizontal room kept free inside each frame, so no marker sits on its edge. */
const X_PAD = 16;
/** Vertical room kept free inside the main frame, so a line at the top or at #0 stays inside. */
const Y_PAD = 5;
const T = 28;
const PH = 230;
const ROW_H = 24;
const ROW_GAP = 6;
/** Events closer than this share one marker. */
const MARKER_SPAN = 22;

/** 1, 2, 5 × 10^k: the smallest step giving at most `max` intervals over `range`. */
export function niceStep(range: number, max: number): number {
  const raw = Math.max(range, 1e-9) / max;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw)!;
}

/**
 * The samples with each holder's missed stats rounds filled in from its previous answer (a busy
 * holder can miss the 0.4 s round; it is not empty then). A struck holder is not filled in after
 * the strike: it is gone. Also returns, per holder, how many rounds were filled in.
 */
export function filledSamples(
  run: Pick<ReportInput["run"], "samples" | "strikeMs">,
  d: Deployment,
): { samples: TimelineSample[]; filled: Record<string, number> } {
  const struck = new Set([d.failures.first, d.failures.second]);
  const regionOf = new Map(d.sites.map((s) => [s.id, s.region]));
  const last = new Map<string, TimelineSample["holders"][string]>();
  const filled: Record<string, number> = {};
  const samples = run.samples.map((s) => {
    const holders = { ...s.holders };
    for (const h of d.holders) {
      const mine = s.holders[h.id];
      if (mine !== undefined) last.set(h.id, mine);
      else if (last.has(h.id) && (s.tMs <= run.strikeMs || !struck.has(regionOf.get(h.site)!))) {
        holders[h.id] = last.get(h.id)!;
        filled[h.id] = (filled[h.id] ?? 0) + 1;
      }
    }
    return { ...s, holders };
  });
  return { samples, filled };
}

/** The "would survive" cut per sample up to the strike; null where a surviving holder never answered yet. */
export function wouldSurviveSeries(
  samples: readonly TimelineSample[],
  strikeMs: number,
  d: Deployment,
): { tMs: number; cut: number | null; missing: string[] }[] {
  const struck = new Set([d.failures.first, d.failures.second]);
  const regionOf = new Map(d.sites.map((s) => [s.id, s.region]));
  const lostHolders = d.holders.filter((h) => struck.has(regionOf.get(h.site)!)).map((h) => h.id);
  const survivors = d.holders.filter((h) => !lostHolders.includes(h.id)).map((h) => h.id);
  const bases = d.holders.filter((h) => h.baseSnapshot).map((h) => ({ holder: h.id, cut: 0, fromMs: 0 }));
  return samples
    .filter((s) => s.tMs <= strikeMs)
    .map((s) => {
      const missing = survivors.filter((h) => s.holders[h] === undefined);
      return {
        tMs: s.tMs,
        missing,
        cut: missing.length > 0 ? null : survivingCutAt(s, { name: "strike", lostHolders }, bases),
      };
    });
}

/** The main plot's scales: time to x, sequence to y, and where the strike sits. */
interface TimelineScale {
  readonly x: (t: number) => number;
  readonly y: (seq: number) => number;
  readonly tMin: number;
  readonly tMax: number;
  readonly yMax: number;
  readonly yStep: number;
  /** The strike's x. */
  readonly sx: number;
}

/** Numbered event markers; `strikeOnly` when every event in it is the strike (which has its own line). */
type EventCluster = { x: number; nums: number[]; strikeOnly: boolean };

type FirstOutcome = ReportInput["run"]["outcomes"][number];

function timelineScale(run: ReportInput["run"], first: FirstOutcome): TimelineScale {
  const times = [...run.samples.map((s) => s.tMs), ...run.events.map((e) => e.tMs)];
  const tMin = Math.min(...times);
  const tMax = Math.max(tMin + 1, ...times);
  const x = (t: number) => L + X_PAD + ((t - tMin) / (tMax - tMin)) * (PW - 2 * X_PAD);
  const top = Math.max(
    1,
    first.acknowledged,
    first.recoveredCut,
    first.predictedCut ?? 0,
    ...run.samples.map((s) => s.acked),
  );
  const yStep = niceStep(top, 5);
  const yMax = Math.ceil(top / yStep) * yStep;
  const y = (seq: number) => T + PH - Y_PAD - (seq / yMax) * (PH - 2 * Y_PAD);
  return { x, y, tMin, tMax, yMax, yStep, sx: x(run.strikeMs) };
}

/** Events: markers at least MARKER_SPAN apart. */
function eventClusters(run: ReportInput["run"], sc: TimelineScale): EventCluster[] {
  const clusters: EventCluster[] = [];
  run.events.forEach((e, i) => {
    const ex = sc.x(e.tMs);
    const last = clusters[clusters.length - 1];
    if (last !== undefined && ex - last.x < MARKER_SPAN) last.nums.push(i + 1);
    else clusters.push({ x: ex, nums: [i + 1], strikeOnly: false });
  });
  for (const c of clusters) c.strikeOnly = c.nums.every((n) => run.events[n - 1]!.label.startsWith("STRIKE"));
  return clusters;
}

/** The cut that would survive, in runs of samples where every surviving holder answered. */
function cutRuns(series: ReturnType<typeof wouldSurviveSeries>): { tMs: number; cut: number }[][] {
  const runs: { tMs: number; cut: number }[][] = [[]];
  for (const p of series)
    if (p.cut === null) runs.push([]);
    else runs[runs.length - 1]!.push({ tMs: p.tMs, cut: p.cut });
  return runs.filter((s) => s.length > 0);
}

/**
 * The main plot: grid, event lines, the acknowledged head, the would-survive cut, the strike, the
 * lost range and the surviving cut. Pushes the axis labels and the strike's label to `outside`.
 */
function mainPlot(
  run: ReportInput["run"],
  first: FirstOutcome,
  sc: TimelineScale,
  clusters: readonly EventCluster[],
  series: ReturnType<typeof wouldSurviveSeries>,
  outside: string[],
): string[] {
  const C = TIMELINE_COLOURS;
  const { x, y, sx } = sc;
  const main: string[] = [`<rect x="${L}" y="${T}" width="${PW}" height="${PH}" class="plot"/>`];
  for (let s = 0; s <= sc.yMax; s += sc.yStep) {
    main.push(`<line class="grid" x1="${L}" x2="${L + PW}" y1="${y(s)}" y2="${y(s)}"/>`);
    outside.push(`<text x="${L - 6}" y="${y(s) + 4}" class="axis" text-anchor="end">#${s}</text>`);
  }
  for (const c of clusters)
    if (!c.strikeOnly && Math.abs(c.x - sx) >= 10) {
      const title = esc(c.nums.map((n) => `${n}. ${run.events[n - 1]!.label}`).join("\n"));
      main.push(
        `<line class="event" x1="${c.x}" x2="${c.x}" y1="${T}" y2="${T + PH}" stroke="${C.event}">` +
          `<title>${title}</title></line>`,
      );
    }
  const ackedPoints = run.samples.map((s) => `${x(s.tMs)},${y(s.acked)}`).join(" ");
  main.push(
    `<polyline class="acked" stroke="${C.acked}" points="${ackedPoints}"><title>acknowledged head</title></polyline>`,
  );
  for (const seg of cutRuns(series))
    main.push(
      `<polyline class="cut" data-scenario="${esc(run.scenario)}" stroke="${C.wouldSurvive}" stroke-dasharray="6,3" ` +
        `points="${seg.map((p) => `${x(p.tMs)},${y(p.cut)}`).join(" ")}">` +
        `<title>cut that would survive '${esc(run.scenario)}' at that moment</title></polyline>`,
    );
  main.push(
    `<line class="strike" x1="${sx}" x2="${sx}" y1="${T}" y2="${T + PH}" stroke="${C.strike}">` +
      `<title>strike: ${esc(run.scenario)}</title></line>`,
  );
  const end = L + PW - X_PAD;
  if (first.lostSeqs > 0) {
    const hi = y(first.acknowledged);
    main.push(
      `<rect class="lost-range" data-volume="${esc(first.volume)}" x="${sx}" y="${hi}" width="${end - sx}" ` +
        `height="${Math.max(3, y(first.recoveredCut) - hi)}" fill="${C.lost}">` +
        `<title>lost ${esc(lostRange(first.recoveredCut, first.acknowledged))}</title></rect>`,
    );
  }
  // Over the lost range, so the cut's line is never hidden under it.
  const cy = y(first.recoveredCut);
  main.push(
    `<line class="surviving-cut" x1="${sx}" x2="${end}" y1="${cy}" y2="${cy}" stroke="${C.surviving}">` +
      `<title>surviving cut #${first.recoveredCut}</title></line>`,
  );
  outside.push(
    `<text class="strike-label" x="${Math.min(Math.max(sx, L + 30), L + PW - 30)}" y="${T - 9}" ` +
      `text-anchor="middle" fill="${C.strike}">strike ${(run.strikeMs / 1000).toFixed(1)} s</text>`,
  );
  return main;
}

/** A holder's retained range over time, as bands (a single sample still gets a sliver of width). */
function retainedBands(
  h: Deployment["holders"][number],
  samples: readonly TimelineSample[],
  x: (t: number) => number,
  ry: (seq: number) => number,
): string[] {
  const segs: TimelineSample[][] = [[]];
  for (const s of samples) {
    const held = s.holders[h.id];
    if (held === undefined || held.retained.length === 0) segs.push([]);
    else segs[segs.length - 1]!.push(s);
  }
  return segs
    .filter((s) => s.length > 0)
    .map((seg) => {
      const set = (s: TimelineSample) => RangeSet.fromJSON(s.holders[h.id]!.retained);
      const xs = seg.length === 1 ? [x(seg[0]!.tMs) - 1, x(seg[0]!.tMs) + 1] : seg.map((s) => x(s.tMs));
      const pts = seg.length === 1 ? [seg[0]!, seg[0]!] : seg;
      const hiPts = pts.map((s, i) => `${xs[i]},${ry(set(s).max ?? 0)}`);
      const loPts = pts.map((s, i) => `${xs[i]},${ry((set(s).min ?? 1) - 1)}`).reverse();
      return (
        `<polygon class="band" data-holder="${esc(h.id)}" points="${[...hiPts, ...loPts].join(" ")}" ` +
        `fill="${TIMELINE_COLOURS.retained}"><title>${esc(h.id)} retained range</title></polygon>`
      );
    });
}

/**
 * One frame per holder: its retained range, on the same sequence scale squeezed into the row. Pushes
 * the row names to `outside`; returns the rows and the y below the last.
 */
function holderRows(
  d: Deployment,
  samples: readonly TimelineSample[],
  sc: TimelineScale,
  outside: string[],
): { rows: string[]; rowY: number } {
  const struck = new Set([d.failures.first, d.failures.second]);
  const regionOf = new Map(d.sites.map((s) => [s.id, s.region]));
  const rows: string[] = [];
  let rowY = T + PH + 12;
  for (const h of d.holders) {
    const gone = struck.has(regionOf.get(h.site)!);
    const top = rowY;
    const ry = (seq: number) => top + ROW_H - 2 - (seq / sc.yMax) * (ROW_H - 4);
    const parts = [`<rect x="${L}" y="${rowY}" width="${PW}" height="${ROW_H}" class="plot row-frame"/>`];
    parts.push(...retainedBands(h, samples, sc.x, ry));
    parts.push(
      `<line class="strike-row" x1="${sc.sx}" x2="${sc.sx}" y1="${rowY}" y2="${rowY + ROW_H}" ` +
        `stroke="${TIMELINE_COLOURS.strike}"/>`,
    );
    rows.push(`<g class="holder-row" data-holder="${esc(h.id)}">${parts.join("")}</g>`);
    outside.push(
      `<text x="${L - 8}" y="${rowY + ROW_H / 2 + 4}" class="rowname" text-anchor="end">` +
        `${esc(h.id)}${gone ? " (struck)" : ""}</text>`,
    );
    rowY += ROW_H + ROW_GAP;
  }
  return { rows, rowY };
}

/** Time axis and the event markers under it, from `rowY` down; returns the y where the figure ends. */
function timeAxis(sc: TimelineScale, clusters: readonly EventCluster[], rowY: number, outside: string[]): number {
  const { x, tMin, tMax } = sc;
  const axisY = rowY + 8;
  const tStep = niceStep((tMax - tMin) / 1000, Math.floor(PW / 70)) * 1000;
  for (let t = Math.ceil(tMin / tStep) * tStep; t <= tMax; t += tStep)
    outside.push(
      `<text x="${x(t)}" y="${axisY}" class="axis" text-anchor="middle">` +
        `${(t / 1000).toFixed(tStep < 1000 ? 1 : 0)} s</text>`,
    );
  const markerY = axisY + 20;
  for (const c of clusters)
    outside.push(`<text class="marker" x="${c.x}" y="${markerY}" text-anchor="middle">${c.nums.join(",")}</text>`);
  outside.push(`<text class="axis" x="${L - 8}" y="${markerY}" text-anchor="end">events</text>`);
  return markerY + 10;
}

function timelineLegend(run: ReportInput["run"], first: FirstOutcome): string {
  const C = TIMELINE_COLOURS;
  const key = (colour: string, text: string) => `<span><i style="background:${colour}"></i>${text}</span>`;
  return [
    key(C.acked, "acknowledged head"),
    key(C.wouldSurvive, `cut that would survive '${esc(run.scenario)}' at that moment`),
    key(C.strike, "strike"),
    key(C.surviving, `surviving cut #${first.recoveredCut}`),
    key(C.lost, `lost range (${esc(lostRange(first.recoveredCut, first.acknowledged))})`),
    key(C.retained, "range a holder retains (one row each)"),
    key(C.event, "event, numbered as listed below"),
  ].join(" ");
}

/** What the reader should know about gaps and filled-in rounds in the figure. */
function timelineNotes(
  run: ReportInput["run"],
  series: ReturnType<typeof wouldSurviveSeries>,
  filled: Record<string, number>,
): string[] {
  const notes: string[] = [];
  const gaps = series.filter((p) => p.cut === null);
  if (gaps.length > 0) {
    const startSec = ((series.find((p) => p.cut !== null)?.tMs ?? run.strikeMs) / 1000).toFixed(1);
    const silent = esc([...new Set(gaps.flatMap((p) => p.missing))].join(", "));
    notes.push(
      `The "would survive" line starts at ${startSec} s: before that ${silent} had not answered a stats round yet.`,
    );
  }
  const missed = Object.entries(filled).map(([h, n]) => `${h} ${n}`);
  if (missed.length > 0)
    notes.push(
      `Stats rounds a holder missed (busy past the 0.4 s round), of ${run.samples.length}: ` +
        `${esc(missed.join(", "))}. There its previous answer is drawn.`,
    );
  const firstKnown = series.find((p) => p.cut !== null);
  if (firstKnown?.cut === 0)
    notes.push(`It starts at #0: at first no holder that survives '${esc(run.scenario)}' held anything yet.`);
  return notes;
}

/** The timeline (`svg#timeline`), its legend entries and the notes under it. */
export function timelineSvg(r: ReportInput): { svg: string; legend: string; notes: string[] } {
  const run = r.run;
  const d = r.deployment;
  const first = run.outcomes.find((o) => o.volume === d.volume)!;
  const sc = timelineScale(run, first);
  const outside: string[] = [];
  const clusters = eventClusters(run, sc);
  const { samples, filled } = filledSamples(run, d);
  const series = wouldSurviveSeries(samples, run.strikeMs, d);
  const main = mainPlot(run, first, sc, clusters, series, outside);
  const { rows, rowY } = holderRows(d, samples, sc, outside);
  const H = timeAxis(sc, clusters, rowY, outside);
  const svg =
    `<svg id="timeline" viewBox="0 0 ${W} ${H}" role="img" aria-label="timeline">` +
    `<g class="main-plot">${main.join("")}</g>${rows.join("")}${outside.join("")}</svg>`;
  return { svg, legend: timelineLegend(run, first), notes: timelineNotes(run, series, filled) };
}
