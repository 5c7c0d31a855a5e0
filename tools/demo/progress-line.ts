/**
 * The demo's live status while it streams (pure formatting): one clock (seconds since the demo
 * started, the same the event lines show), one line per volume (its acknowledged head and the cut
 * its receipts protect; the difference is "in flight": acknowledged, receipts not back yet), and
 * one line listing every site that holds custody, always in the same order.
 */

/** One volume's figures. */
export interface VolumeProgress {
  readonly volume: string;
  /** Writes the application saw acknowledged, and the highest lane sequence among them. */
  readonly writes: number;
  readonly acked: number;
  /** Cut every required scenario keeps, per the controller's receipt ledger (null: none yet / controller gone). */
  readonly receiptedCut: number | null;
}

/** What the live block shows. */
export interface Progress {
  /** Seconds since the demo started. */
  readonly seconds: number;
  readonly phase: string;
  /** Acknowledged MB/s over the stream, all volumes together. */
  readonly mbPerSec: number;
  readonly volumes: readonly VolumeProgress[];
  /**
   * Every custody site in a fixed order with its bytes in custody (RAM holders shrink as releases
   * land), "struck" once its region is gone, or null before its first answer.
   */
  readonly sites: readonly { readonly site: string; readonly bytes: number | null | "struck" }[];
}

const size = (n: number) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${Math.round(n / 1024)} KiB`);

/** The clock column every demo line starts with (`  25.1 s  `). */
export const clock = (seconds: number) => `${seconds.toFixed(1).padStart(5)} s  `;

/** The block's lines (no newlines): a heading on the clock, one per volume, then the sites. */
export function formatProgress(p: Progress): string[] {
  const indent = " ".repeat(clock(0).length + 2);
  const name = Math.max(...p.volumes.map((v) => v.volume.length), "in custody".length);
  const lines = [`  ${clock(p.seconds)}${p.phase} · ${p.mbPerSec.toFixed(1)} MB/s acknowledged`];
  for (const v of p.volumes) {
    const inFlight = Math.max(0, v.acked - (v.receiptedCut ?? 0));
    lines.push(
      `${indent}${v.volume.padEnd(name)}  ${v.writes} writes, acked #${v.acked}, ` +
        `receipts protect #${v.receiptedCut ?? "-"} (${inFlight} in flight)`,
    );
  }
  const sites = p.sites
    .map((s) => `${s.site} ${s.bytes === null ? "…" : s.bytes === "struck" ? "struck" : size(s.bytes)}`)
    .join(" · ");
  lines.push(`${indent}${"in custody".padEnd(name)}  ${sites}`);
  return lines;
}
