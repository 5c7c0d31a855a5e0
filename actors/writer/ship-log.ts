import type { ShipLogEntry } from "./writer-ports.ts";

/**
 * WAL metadata of recent writes (LSN, LBA, blocks — no data), bounded by the volume's WAL window:
 * what a replica's WAL catch-up replays (the data is re-read from the extent, memo 4.4).
 */
export class ShipLog {
  private readonly entries: ShipLogEntry[] = [];

  /** `walStart` reports the first LSN still inside the volume's WAL window. */
  constructor(private readonly walStart: () => number) {}

  /** Records one write; trims what left the WAL window once the log grows long. */
  push(entry: ShipLogEntry): void {
    this.entries.push(entry);
    if (this.entries.length > 4096) this.trim();
  }

  /** Entries after `lsn` still inside the WAL window, oldest first. */
  after(lsn: number): ShipLogEntry[] {
    this.trim();
    return this.entries.filter((e) => e.lsn > lsn);
  }

  private trim(): void {
    const start = this.walStart();
    let drop = 0;
    while (drop < this.entries.length && this.entries[drop]!.lsn < start) drop++;
    if (drop > 0) this.entries.splice(0, drop);
  }
}
