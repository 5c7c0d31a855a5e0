/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The drawing check of a demo report (issue #47): opens `report.html` in Debian's Chromium through
 * playwright-core (no browser download: the system binary, a fresh profile, no network features)
 * and measures the laid-out page. A fault is anything a reader would see as broken:
 *   - two text labels overlap, a label sits on a box it does not belong to, or a line crosses a label
 *     (a label may touch its own edge, named by `data-for` = the edge's `data-edge`);
 *   - an arrow runs through a box other than the two it joins;
 *   - a line or marker leaves its plot area (the `rect.plot` frame and its siblings), or event
 *     markers (`line.event`) crowd each other or the frame's edge;
 *   - two translucent fills overlap in a plot (their blend is a colour no legend explains);
 *   - a legend shows two meanings in colours too close to tell apart, or a plot paints a colour its
 *     legend does not name;
 *   - a figure leaves a large part of the page's width unused.
 * It also saves a full-page screenshot. `tsx scripts/report-layout.ts <report.html> [shot.png]`
 * prints the faults and exits 1 when there is one.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type BrowserContext } from "playwright-core";

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

/** Thrown when no Chromium is installed where the check looks. */
export class ChromiumMissingError extends Error {
  readonly code = "chromium_missing";
  constructor(path: string) {
    super(`no Chromium at ${path}: install Debian's package (apt-get install -y chromium)`);
  }
}

/** The Debian package's binary. */
export const CHROMIUM = "/usr/bin/chromium";
/** The page width the report is checked at (a laptop screen). */
export const VIEWPORT = { width: 1400, height: 900 } as const;
/** Colours closer than this (CIE76 ΔE) read as the same colour. */
const SAME_COLOUR_DE = 25;

/** Chromium headless with a fresh profile that `close()` removes. */
export async function openChromium(): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  if (!existsSync(CHROMIUM)) throw new ChromiumMissingError(CHROMIUM);
  const profile = mkdtempSync(join(tmpdir(), "report-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: VIEWPORT,
  });
  // Functions handed to the page keep esbuild's name helper (tsx adds it): give the page one.
  await context.addInitScript("globalThis.__name = (f) => f;");
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens `htmlPath` in `context`, returns the faults found and saves a full-page screenshot to `pngPath` when given. */
export async function checkReportLayout(
  context: BrowserContext,
  htmlPath: string,
  pngPath?: string,
): Promise<LayoutFault[]> {
  const page = await context.newPage();
  try {
    await page.goto(pathToFileURL(resolve(htmlPath)).href);
    await page.waitForFunction(() => document.body.dataset.rendered === "yes");
    const faults = await page.evaluate(pageFaults, SAME_COLOUR_DE);
    if (pngPath !== undefined) await page.screenshot({ path: pngPath, fullPage: true });
    return faults;
  } finally {
    await page.close();
  }
}

/** Runs inside the page: every fault of the laid-out report (self-contained: no outer names). */
function pageFaults(sameColourDe: number): LayoutFault[] {
  /** Closer than this (user units) event markers blur into one. */
  const MARKER_GAP = 10;
  type Box = { left: number; right: number; top: number; bottom: number };
  const faults: LayoutFault[] = [];
  const add = (kind: LayoutFault["kind"], where: string, detail: string) => faults.push({ kind, where, detail });
  const hit = (a: Box, b: Box, pad: number) =>
    a.left + pad < b.right && b.left + pad < a.right && a.top + pad < b.bottom && b.top + pad < a.bottom;
  const inside = (p: { x: number; y: number }, b: Box, pad: number) =>
    p.x > b.left + pad && p.x < b.right - pad && p.y > b.top + pad && p.y < b.bottom - pad;
  const label = (el: Element) =>
    el.tagName +
    (el.getAttribute("class") ? "." + el.getAttribute("class") : "") +
    (el.textContent?.trim() ? ` "${el.textContent.trim().slice(0, 40)}"` : "") +
    ((el as HTMLElement).dataset?.edge ? ` [${(el as HTMLElement).dataset.edge}]` : "");
  const figName = (svg: Element) => svg.id || svg.getAttribute("aria-label") || "svg";

  // Colours: CSS rgb() → CIE Lab, so "close" means close to the eye.
  const rgbOf = (css: string): [number, number, number, number] | null => {
    const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(css);
    return m === null ? null : [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
  };
  const lab = ([r, g, b]: [number, number, number, number]): [number, number, number] => {
    const lin = (c: number) => ((c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    const [R, G, B] = [lin(r), lin(g), lin(b)];
    const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : (t * 24389) / 27 / 116 + 16 / 116);
    const x = f((R * 0.4124 + G * 0.3576 + B * 0.1805) / 0.95047);
    const y = f(R * 0.2126 + G * 0.7152 + B * 0.0722);
    const z = f((R * 0.0193 + G * 0.1192 + B * 0.9505) / 1.08883);
    return [116 * y - 16, 500 * (x - y), 200 * (y - z)];
  };
  const dE = (a: [number, number, number], b: [number, number, number]) =>
    Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
  const neutral = (l: [number, number, number]) => Math.hypot(l[1], l[2]) < 10 || l[0] > 96;

  // Points along a line-like element, in page coordinates.
  const pointsOf = (el: SVGGeometryElement): { x: number; y: number }[] => {
    const ctm = el.getScreenCTM();
    if (ctm === null) return [];
    const len = el.getTotalLength();
    const n = Math.min(2000, Math.max(2, Math.ceil(len / 2)));
    const out: { x: number; y: number }[] = [];
    for (let i = 0; i <= n; i++) {
      const p = el.getPointAtLength((len * i) / n);
      out.push({
        x: ctm.a * p.x + ctm.c * p.y + ctm.e + window.scrollX,
        y: ctm.b * p.x + ctm.d * p.y + ctm.f + window.scrollY,
      });
    }
    return out;
  };
  const pageBox = (el: Element): Box => {
    const r = el.getBoundingClientRect();
    return {
      left: r.left + window.scrollX,
      right: r.right + window.scrollX,
      top: r.top + window.scrollY,
      bottom: r.bottom + window.scrollY,
    };
  };

  for (const svg of document.querySelectorAll("svg")) {
    const fig = figName(svg);
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
      // An arrow ends at two boxes (the nearest to its ends) and crosses no other.
      if (line.getAttribute("marker-end") !== null && boxes.length > 0 && pts.length > 1) {
        const nearest = (p: { x: number; y: number }) =>
          bBox.reduce(
            (best, b, k) =>
              Math.hypot(Math.max(b.left - p.x, 0, p.x - b.right), Math.max(b.top - p.y, 0, p.y - b.bottom)) <
              Math.hypot(
                Math.max(bBox[best]!.left - p.x, 0, p.x - bBox[best]!.right),
                Math.max(bBox[best]!.top - p.y, 0, p.y - bBox[best]!.bottom),
              )
                ? k
                : best,
            0,
          );
        const ends = new Set([nearest(pts[0]!), nearest(pts[pts.length - 1]!)]);
        bBox.forEach(
          (b, k) =>
            !ends.has(k) &&
            pts.some((p) => inside(p, b, 2)) &&
            add("arrow_through_box", fig, `${label(line)} runs through ${label(boxes[k]!.parentElement!)}`),
        );
      }
    }

    // Plot areas: a frame's siblings stay inside it; translucent fills do not overlap.
    const legend =
      (svg.closest("figure") ?? svg.parentElement)?.querySelector(".legend") ??
      (svg.previousElementSibling?.classList.contains("legend") ? svg.previousElementSibling : null);
    const swatches =
      legend === null
        ? []
        : [...legend.querySelectorAll("i")]
            .map((i) => rgbOf(getComputedStyle(i).backgroundColor))
            .filter((c) => c !== null && c[3] > 0)
            .map((c) => lab(c!));
    for (const frame of svg.querySelectorAll("rect.plot")) {
      const f = (frame as SVGGraphicsElement).getBBox();
      const shapes = [...frame.parentElement!.children].filter(
        (el) => el !== frame && ["line", "polyline", "polygon", "path", "rect", "circle"].includes(el.tagName),
      ) as SVGGraphicsElement[];
      const translucent: { el: Element; b: DOMRect }[] = [];
      for (const el of shapes) {
        const cs = getComputedStyle(el);
        const b = el.getBBox();
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
        const fill = rgbOf(cs.fill);
        if (fill !== null && cs.fill !== "none" && Number(cs.fillOpacity) * Number(cs.opacity) * fill[3] < 1)
          translucent.push({ el, b });
        if (swatches.length > 0) {
          for (const paint of [cs.stroke, cs.fill]) {
            const c = rgbOf(paint);
            if (c === null || c[3] === 0) continue;
            const l = lab(c);
            if (!neutral(l) && !swatches.some((s) => dE(s, l) < 6))
              add("colour_not_in_legend", fig, `${label(el)} is painted ${paint}, a colour its legend does not name`);
          }
        }
      }
      const marks = shapes
        .filter((el) => el.classList.contains("event"))
        .map((el) => el.getBBox().x)
        .sort((a, b) => a - b);
      const edges = [f.x, ...marks, f.x + f.width];
      for (let i = 1; i < edges.length; i++)
        if (edges[i]! - edges[i - 1]! < MARKER_GAP)
          add(
            "crowded_markers",
            fig,
            `event markers ${(edges[i]! - edges[i - 1]!).toFixed(1)} apart ` +
              `at x ${edges[i - 1]!.toFixed(1)} (frame ${f.x}–${f.x + f.width})`,
          );
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
    if (svg.getBoundingClientRect().width < 0.85 * document.documentElement.clientWidth)
      add(
        "narrow_figure",
        fig,
        `${Math.round(svg.getBoundingClientRect().width)} px wide of ${document.documentElement.clientWidth}`,
      );
  }

  for (const legend of document.querySelectorAll(".legend")) {
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
  return faults;
}

// `tsx scripts/report-layout.ts <report.html> [shot.png]`
if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const [html, png] = process.argv.slice(2);
  if (html === undefined) {
    console.error("usage: tsx scripts/report-layout.ts <report.html> [screenshot.png]");
    process.exit(2);
  }
  const browser = await openChromium();
  try {
    const faults = await checkReportLayout(browser.context, html, png ?? join(resolve(html, ".."), "report.png"));
    for (const f of faults) console.log(`${f.kind}  ${f.where}: ${f.detail}`);
    console.log(`${faults.length} drawing faults; screenshot ${png ?? join(resolve(html, ".."), "report.png")}`);
    process.exitCode = faults.length === 0 ? 0 : 1;
  } finally {
    await browser.close();
  }
}
