/**
 * Where the demo's lines go. On a terminal the live status is a block of lines rewritten in place
 * (an event line clears it, prints, and the next status redraws it below); otherwise (a pipe, a
 * log, `--json`) the status is printed as plain lines at most once per `everyMs`, so a log stays
 * readable.
 */

/** Terminal output for the demo; `write` gets raw text, `now` the clock in ms. */
export class LiveBlock {
  private shown = 0;
  private lastPlainMs = -Infinity;

  constructor(
    private readonly write: (text: string) => void,
    private readonly tty: boolean,
    private readonly now: () => number = Date.now,
    private readonly everyMs = 5_000,
  ) {}

  /** A line that stays (an event, a table). */
  print(line: string): void {
    this.clear();
    this.write(`${line}\n`);
  }

  /** The live status: replaces the previous block on a terminal. */
  show(lines: readonly string[]): void {
    if (!this.tty) {
      if (this.now() - this.lastPlainMs < this.everyMs) return;
      this.lastPlainMs = this.now();
      this.write(lines.map((l) => `${l}\n`).join(""));
      return;
    }
    this.clear();
    this.write(lines.map((l) => `${l}\x1b[K\n`).join(""));
    this.shown = lines.length;
  }

  /** Removes the block (before a line that stays, and at the end). */
  clear(): void {
    if (this.shown === 0) return;
    this.write(`\x1b[${this.shown}A\r\x1b[J`);
    this.shown = 0;
  }
}
