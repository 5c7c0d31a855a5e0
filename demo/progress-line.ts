/** The live progress line (pure formatting): writes, bytes in custody per site, receipts, lag. */

/** What one progress line shows. */
export interface Progress {
  readonly phase: string;
  readonly writes: number;
  readonly acked: number;
  /** Site label → bytes currently in custody there. */
  readonly custodyBytes: Readonly<Record<string, number>>;
  /** Highest sequence every live holder has captured contiguously (the slowest one's frontier). */
  readonly slowestFrontier: number;
  readonly slowestHolder: string;
  /** Cut every required scenario keeps per the controller's receipts (null: none / controller gone). */
  readonly receiptedCut: number | null;
}

const kib = (n: number) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)}M` : `${Math.round(n / 1024)}K`);

/** One line, no newline; lag = acknowledged sequences not yet captured by the slowest live holder. */
export function formatProgress(p: Progress): string {
  const sites = Object.entries(p.custodyBytes)
    .map(([s, b]) => `${s} ${kib(b)}`)
    .join(" ");
  return `[${p.phase}] writes ${p.writes} acked#${p.acked} | custody ${sites} | receipts protect #${p.receiptedCut ?? "-"} | lag ${Math.max(0, p.acked - p.slowestFrontier)} seq (${p.slowestHolder})`;
}
