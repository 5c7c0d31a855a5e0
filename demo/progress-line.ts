/** The live progress line (pure formatting): writes, bytes in custody per site, receipts, lag. */

/** What one progress line shows. */
export interface Progress {
  readonly phase: string;
  readonly writes: number;
  /** Highest lane sequence the writer acknowledged. */
  readonly acked: number;
  /** Site → bytes currently in custody there (RAM holders shrink as releases land). */
  readonly custodyBytes: Readonly<Record<string, number>>;
  /** Cut every required scenario keeps, per the controller's receipt ledger (null: none yet / controller gone). */
  readonly receiptedCut: number | null;
  /** Seconds of streaming so far and the acknowledged write rate over them. */
  readonly seconds?: number;
  readonly mbPerSec?: number;
}

const kib = (n: number) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)}M` : `${Math.round(n / 1024)}K`);

/** One line, no newline. Lag = acknowledged sequences that receipts do not yet protect in every required scenario. */
export function formatProgress(p: Progress): string {
  const sites = Object.entries(p.custodyBytes)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([s, b]) => `${s} ${kib(b)}`)
    .join(" ");
  const lag = Math.max(0, p.acked - (p.receiptedCut ?? 0));
  const rate = p.seconds === undefined ? "" : ` ${p.seconds.toFixed(1)} s ${(p.mbPerSec ?? 0).toFixed(1)} MB/s |`;
  return `[${p.phase}]${rate} writes ${p.writes} acked #${p.acked} | in custody: ${sites} | receipts protect #${p.receiptedCut ?? "-"} | lag ${lag} seq`;
}
