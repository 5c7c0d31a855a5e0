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
 * It also saves a full-page screenshot. `tsx tools/scripts/report-layout.ts <report.html> [shot.png]`
 * prints the faults and exits 1 when there is one.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type BrowserContext } from "playwright-core";
import { PAGE_FUNCTIONS, pageFaults, type LayoutFault } from "./report-page-faults.ts";

export type { LayoutFault };

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
    // The page's functions go in as one script; then the call runs there (see report-page-faults.ts).
    await page.addScriptTag({ content: PAGE_FUNCTIONS.map((f) => f.toString()).join("\n") });
    const faults = await page.evaluate((de) => pageFaults(de), SAME_COLOUR_DE);
    if (pngPath !== undefined) await page.screenshot({ path: pngPath, fullPage: true });
    return faults;
  } finally {
    await page.close();
  }
}

// `tsx tools/scripts/report-layout.ts <report.html> [shot.png]`
if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const [html, png] = process.argv.slice(2);
  if (html === undefined) {
    console.error("usage: tsx tools/scripts/report-layout.ts <report.html> [screenshot.png]");
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
