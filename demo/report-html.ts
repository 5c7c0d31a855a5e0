import type { DemoResult } from "./demo-script.ts";
/** Placeholder. */
export function renderReport(r: DemoResult): string {
  return `<html><body>${r.runDir}</body></html>`;
}
