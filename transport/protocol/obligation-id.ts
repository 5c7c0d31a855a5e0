/** The obligation id holders put in their receipts for a lane (`<volume>-<lane>`). */
export function obligationIdOf(volume: string, lane: string): string {
  return `${volume}-${lane}`;
}
