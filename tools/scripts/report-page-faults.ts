/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The part of the report's drawing check that runs inside the page (tools/scripts/report-layout.ts opens
 * it). Every function here is a plain declaration using only its arguments, the DOM and the other
 * functions of `PAGE_FUNCTIONS`: the check installs their sources in the page as one script, then
 * calls `pageFaults` there.
 */

/** One drawing fault, with what it concerns. */
export interface LayoutFault {
  readonly kind:
    | "text_overlap"
    | "text_on_box"
    | "text_on_line"
    | "arrow_through_box"
    | "outside_plot"
    | "translucent_overlap"
    | "legend_colour_reused"
    | "colour_not_in_legend"
    | "crowded_markers"
    | "narrow_figure";
  readonly where: string;
  readonly detail: string;
}

type Box = { left: number; right: number; top: number; bottom: number };
type Point = { x: number; y: number };
type Lab = [number, number, number];
type Rgba = [number, number, number, number];
type AddFault = (kind: LayoutFault["kind"], where: string, detail: string) => void;

/** Every fault of the laid-out report. */
export function pageFaults(sameColourDe: number): LayoutFault[] {
  const faults: LayoutFault[] = [];
  const add: AddFault = (kind, where, detail) => faults.push({ kind, where, detail });
  for (const svg of document.querySelectorAll("svg")) figureFaults(svg, add);
  for (const legend of document.querySelectorAll(".legend")) legendFaults(legend, sameColourDe, add);
  return faults;
}

/** One figure: labels against labels, boxes and lines; arrows against boxes; plots; its width. */
function figureFaults(svg: SVGSVGElement, add: AddFault): void {
  const fig = svg.id || svg.getAttribute("aria-label") || "svg";
  const texts = [...svg.querySelectorAll("text")].filter(
    (t) => (t.textContent ?? "").trim() !== "" && t.getBoundingClientRect().width > 0,
  );
  const tBox = texts.map(pageBox);
  for (let i = 0; i < texts.length; i++)
    for (let j = i + 1; j < texts.length; j++)
      if (hit(tBox[i]!, tBox[j]!, 1)) add("text_overlap", fig, `${label(texts[i]!)} overlaps ${label(texts[j]!)}`);
  const boxes = [...svg.querySelectorAll("g.site > rect, g.node > rect")];
  const bBox = boxes.map(pageBox);
  texts.forEach((t, i) =>
    boxes.forEach(
      (b, k) =>
        !b.parentElement!.contains(t) &&
        hit(tBox[i]!, bBox[k]!, 1) &&
        add("text_on_box", fig, `${label(t)} lies on the box of ${label(b.parentElement!)}`),
    ),
  );
  const lines = [...svg.querySelectorAll("line, polyline, polygon, path")].filter(
    (el) => el.closest("defs, marker") === null && getComputedStyle(el).stroke !== "none",
  ) as SVGGeometryElement[];
  for (const line of lines) {
    const pts = pointsOf(line);
    const own = (line as SVGElement).dataset.edge;
    texts.forEach((t, i) => {
      if (own !== undefined && own === t.dataset.for) return;
      if (pts.some((p) => inside(p, tBox[i]!, 1))) add("text_on_line", fig, `${label(line)} crosses ${label(t)}`);
    });
    if (line.getAttribute("marker-end") !== null && boxes.length > 0 && pts.length > 1) {
      arrowFaults(line, pts, boxes, bBox, fig, add);
    }
  }
  const swatches = legendSwatches(svg);
  for (const frame of svg.querySelectorAll("rect.plot")) plotFaults(frame as SVGGraphicsElement, swatches, fig, add);
  if (svg.getBoundingClientRect().width < 0.85 * document.documentElement.clientWidth)
    add(
      "narrow_figure",
      fig,
      `${Math.round(svg.getBoundingClientRect().width)} px wide of ${document.documentElement.clientWidth}`,
    );
}

/** An arrow ends at two boxes (the nearest to its ends) and crosses no other. */
function arrowFaults(line: Element, pts: Point[], boxes: Element[], bBox: Box[], fig: string, add: AddFault): void {
  const distance = (b: Box, p: Point) =>
    Math.hypot(Math.max(b.left - p.x, 0, p.x - b.right), Math.max(b.top - p.y, 0, p.y - b.bottom));
  const nearest = (p: Point) => bBox.reduce((best, b, k) => (distance(b, p) < distance(bBox[best]!, p) ? k : best), 0);
  const ends = new Set([nearest(pts[0]!), nearest(pts[pts.length - 1]!)]);
  bBox.forEach(
    (b, k) =>
      !ends.has(k) &&
      pts.some((p) => inside(p, b, 2)) &&
      add("arrow_through_box", fig, `${label(line)} runs through ${label(boxes[k]!.parentElement!)}`),
  );
}

/** The colours a figure's legend names (in Lab). */
function legendSwatches(svg: SVGSVGElement): Lab[] {
  const legend =
    (svg.closest("figure") ?? svg.parentElement)?.querySelector(".legend") ??
    (svg.previousElementSibling?.classList.contains("legend") ? svg.previousElementSibling : null);
  if (legend === null) return [];
  return [...legend.querySelectorAll("i")]
    .map((i) => rgbOf(getComputedStyle(i).backgroundColor))
    .filter((c) => c !== null && c[3] > 0)
    .map((c) => lab(c!));
}

/**
 * Plot areas: a frame's siblings stay inside it and paint legend colours, event markers keep apart,
 * and translucent fills do not overlap.
 */
function plotFaults(frame: SVGGraphicsElement, swatches: Lab[], fig: string, add: AddFault): void {
  const f = frame.getBBox();
  const shapes = [...frame.parentElement!.children].filter(
    (el) => el !== frame && ["line", "polyline", "polygon", "path", "rect", "circle"].includes(el.tagName),
  ) as SVGGraphicsElement[];
  const translucent: { el: Element; b: DOMRect }[] = [];
  for (const el of shapes) {
    const cs = getComputedStyle(el);
    const b = el.getBBox();
    outsideFault(el, cs, b, f, fig, add);
    const fill = rgbOf(cs.fill);
    if (fill !== null && cs.fill !== "none" && Number(cs.fillOpacity) * Number(cs.opacity) * fill[3] < 1)
      translucent.push({ el, b });
    if (swatches.length > 0) paintFaults(el, cs, swatches, fig, add);
  }
  markerFaults(shapes, f, fig, add);
  for (let i = 0; i < translucent.length; i++)
    for (let j = i + 1; j < translucent.length; j++) {
      const [a, b] = [translucent[i]!.b, translucent[j]!.b];
      const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
      const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
      if (w > 1 && h > 1)
        add(
          "translucent_overlap",
          fig,
          `${label(translucent[i]!.el)} and ${label(translucent[j]!.el)} blend where they overlap`,
        );
    }
}

/** A shape reaching outside its plot frame (its stroke included, except along a straight line). */
function outsideFault(el: Element, cs: CSSStyleDeclaration, b: DOMRect, f: DOMRect, fig: string, add: AddFault): void {
  const sw = cs.stroke === "none" ? 0 : parseFloat(cs.strokeWidth) / 2;
  const isLine = el.tagName === "line";
  const vertical = isLine && b.width === 0;
  const horizontal = isLine && b.height === 0;
  const [dx, dy] = [horizontal ? 0 : sw, vertical ? 0 : sw];
  if (
    b.x - dx < f.x - 0.01 ||
    b.y - dy < f.y - 0.01 ||
    b.x + b.width + dx > f.x + f.width + 0.01 ||
    b.y + b.height + dy > f.y + f.height + 0.01
  )
    add(
      "outside_plot",
      fig,
      `${label(el)} reaches ` +
        `(${(b.x - dx).toFixed(1)}, ${(b.y - dy).toFixed(1)})–` +
        `(${(b.x + b.width + dx).toFixed(1)}, ${(b.y + b.height + dy).toFixed(1)}) ` +
        `outside its plot (${f.x}, ${f.y})–(${f.x + f.width}, ${f.y + f.height})`,
    );
}

/** A stroke or fill whose colour the legend does not name (neutral greys and near-white are free). */
function paintFaults(el: Element, cs: CSSStyleDeclaration, swatches: Lab[], fig: string, add: AddFault): void {
  for (const paint of [cs.stroke, cs.fill]) {
    const c = rgbOf(paint);
    if (c === null || c[3] === 0) continue;
    const l = lab(c);
    if (!neutral(l) && !swatches.some((s) => dE(s, l) < 6))
      add("colour_not_in_legend", fig, `${label(el)} is painted ${paint}, a colour its legend does not name`);
  }
}

/** Event markers (and the frame's edges) closer than 10 user units blur into one. */
function markerFaults(shapes: SVGGraphicsElement[], f: DOMRect, fig: string, add: AddFault): void {
  const marks = shapes
    .filter((el) => el.classList.contains("event"))
    .map((el) => el.getBBox().x)
    .sort((a, b) => a - b);
  const edges = [f.x, ...marks, f.x + f.width];
  for (let i = 1; i < edges.length; i++)
    if (edges[i]! - edges[i - 1]! < 10)
      add(
        "crowded_markers",
        fig,
        `event markers ${(edges[i]! - edges[i - 1]!).toFixed(1)} apart ` +
          `at x ${edges[i - 1]!.toFixed(1)} (frame ${f.x}–${f.x + f.width})`,
      );
}

/** Two meanings of one legend in colours too close to tell apart. */
function legendFaults(legend: Element, sameColourDe: number, add: AddFault): void {
  const entries = [...legend.querySelectorAll("i")]
    .map((i) => ({ text: i.parentElement?.textContent?.trim() ?? "", c: rgbOf(getComputedStyle(i).backgroundColor) }))
    .filter((e) => e.c !== null && e.c[3] > 0);
  for (let i = 0; i < entries.length; i++)
    for (let j = i + 1; j < entries.length; j++) {
      const d = dE(lab(entries[i]!.c!), lab(entries[j]!.c!));
      if (d < sameColourDe)
        add(
          "legend_colour_reused",
          "legend",
          `"${entries[i]!.text}" and "${entries[j]!.text}" are drawn in colours ${d.toFixed(1)} apart (ΔE)`,
        );
    }
}

function hit(a: Box, b: Box, pad: number): boolean {
  return a.left + pad < b.right && b.left + pad < a.right && a.top + pad < b.bottom && b.top + pad < a.bottom;
}

function inside(p: Point, b: Box, pad: number): boolean {
  return p.x > b.left + pad && p.x < b.right - pad && p.y > b.top + pad && p.y < b.bottom - pad;
}

/** How a fault names an element: tag, class, text and edge. */
function label(el: Element): string {
  return (
    el.tagName +
    (el.getAttribute("class") ? "." + el.getAttribute("class") : "") +
    (el.textContent?.trim() ? ` "${el.textContent.trim().slice(0, 40)}"` : "") +
    ((el as HTMLElement).dataset?.edge ? ` [${(el as HTMLElement).dataset.edge}]` : "")
  );
}

/** CSS rgb()/rgba() as numbers (null for anything else). */
function rgbOf(css: string): Rgba | null {
  const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(css);
  return m === null ? null : [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
}

/** sRGB → CIE Lab, so that "close" means close to the eye. */
function lab([r, g, b]: Rgba): Lab {
  const lin = (c: number) => ((c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const [R, G, B] = [lin(r), lin(g), lin(b)];
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : (t * 24389) / 27 / 116 + 16 / 116);
  const x = f((R * 0.4124 + G * 0.3576 + B * 0.1805) / 0.95047);
  const y = f(R * 0.2126 + G * 0.7152 + B * 0.0722);
  const z = f((R * 0.0193 + G * 0.1192 + B * 0.9505) / 1.08883);
  return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
}

function dE(a: Lab, b: Lab): number {
  return Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

function neutral(l: Lab): boolean {
  return Math.hypot(l[1], l[2]) < 10 || l[0] > 96;
}

/** Points along a line-like element, in page coordinates. */
function pointsOf(el: SVGGeometryElement): Point[] {
  const ctm = el.getScreenCTM();
  if (ctm === null) return [];
  const len = el.getTotalLength();
  const n = Math.min(2000, Math.max(2, Math.ceil(len / 2)));
  const out: Point[] = [];
  for (let i = 0; i <= n; i++) {
    const p = el.getPointAtLength((len * i) / n);
    out.push({
      x: ctm.a * p.x + ctm.c * p.y + ctm.e + window.scrollX,
      y: ctm.b * p.x + ctm.d * p.y + ctm.f + window.scrollY,
    });
  }
  return out;
}

function pageBox(el: Element): Box {
  const r = el.getBoundingClientRect();
  return {
    left: r.left + window.scrollX,
    right: r.right + window.scrollX,
    top: r.top + window.scrollY,
    bottom: r.bottom + window.scrollY,
  };
}

/** Every function the page needs, installed there as one script before `pageFaults` is called. */
export const PAGE_FUNCTIONS = [
  pageFaults,
  figureFaults,
  arrowFaults,
  legendSwatches,
  plotFaults,
  outsideFault,
  paintFaults,
  markerFaults,
  legendFaults,
  hit,
  inside,
  label,
  rgbOf,
  lab,
  dE,
  neutral,
  pointsOf,
  pageBox,
] as const;
