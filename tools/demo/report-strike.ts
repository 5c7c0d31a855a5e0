/**
 * The strike, sequence by sequence, for one volume (pure SVG): the last acknowledged sequences
 * before the strike, which of them each survivor held once settled, the cut the controller
 * predicted from their receipts, the cut the recovery reached, and the lost range in its own colour.
 */
import { RangeSet } from "../../lanes/index.ts";
import { lostRange } from "./scenario-table.ts";
import type { RunResult, VolumeOutcome } from "./strike-run.ts";

/** HTML/SVG text escaping. */
export const esc = (s: unknown) =>
  String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

/** How many sequences before the lowest cut the zoom shows. */
const CONTEXT = 10;

/** One zoom SVG (`class="zoom"`, `data-volume`) for outcome `o` of `run`. */
export function strikeZoomSvg(run: Pick<RunResult, "survivorRanges">, o: VolumeOutcome): string {
  const lo = Math.max(1, Math.min(o.predictedCut ?? 0, o.recoveredCut, o.acknowledged) - CONTEXT);
  const hi = Math.max(o.acknowledged, o.recoveredCut, o.predictedCut ?? 0) + 1;
  const n = hi - lo + 1;
  const L = 190;
  const W = 1280;
  const cw = (W - L - 10) / n;
  const rh = 16;
  const held = run.survivorRanges[o.volume] ?? {};
  const rows: { label: string; cls: string; has: (s: number) => boolean }[] = [
    { label: "acknowledged", cls: "acked-cell", has: (s) => s <= o.acknowledged },
    // Survivors that hold nothing of this volume (not on its custody path) get no row.
    ...Object.entries(held)
      .filter(([, r]) => r.length > 0)
      .map(([h, r]) => ({
        label: `${h} holds (settled)`,
        cls: "held",
        has: (s: number) => RangeSet.fromJSON(r).has(s),
      })),
    { label: "predicted from receipts", cls: "kept", has: (s) => s <= (o.predictedCut ?? 0) },
    { label: "recovered", cls: "kept", has: (s) => s <= o.recoveredCut },
  ];
  const parts: string[] = [];
  rows.forEach((row, i) => {
    const y = 24 + i * (rh + 4);
    parts.push(`<text class="row" x="4" y="${y + 12}">${esc(row.label)}</text>`);
    for (let s = lo; s <= hi; s++)
      if (row.has(s))
        parts.push(
          `<rect class="${row.cls}" x="${L + (s - lo) * cw}" y="${y}" width="${Math.max(1, cw - 1)}" height="${rh}">` +
            `<title>#${s}</title></rect>`,
        );
  });
  // The lost range, on its own row under the recovery.
  const ly = 24 + rows.length * (rh + 4);
  const lost = esc(lostRange(o.recoveredCut, o.acknowledged));
  parts.push(`<text class="row" x="4" y="${ly + 12}">lost ${lost}</text>`);
  if (o.lostSeqs > 0)
    parts.push(
      `<rect class="lost-range" data-volume="${esc(o.volume)}" data-range="${lost}" ` +
        `x="${L + (o.recoveredCut + 1 - lo) * cw}" y="${ly}" width="${(o.acknowledged - o.recoveredCut) * cw - 1}" ` +
        `height="${rh}"><title>lost ${lost}</title></rect>`,
    );
  for (let s = lo; s <= hi; s += Math.max(1, Math.ceil(n / 12)))
    parts.push(`<text class="axis" x="${L + (s - lo) * cw}" y="14">#${s}</text>`);
  const H = ly + rh + 10;
  return (
    `<h3>${esc(o.volume)} — ${esc(o.path)}: acknowledged #${o.acknowledged}, ` +
    `predicted #${o.predictedCut ?? "nothing"}, recovered #${o.recoveredCut}</h3>` +
    `<svg class="zoom" data-volume="${esc(o.volume)}" viewBox="0 0 ${W} ${H}" role="img" ` +
    `aria-label="strike ${esc(o.volume)}">${parts.join("")}</svg>`
  );
}
