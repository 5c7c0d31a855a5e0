import type { ControlEvent, ControlLogEntry, ControlSigner } from "../custody/index.ts";
import { InMemoryControlLog } from "../custody/index.ts";

/**
 * The region's control log of the simulated world; hands every committed entry (by the
 * controller, its policy or an operator) to `onAppend` before the committer hears back.
 */
export class TracedControlLog extends InMemoryControlLog {
  private delivered = 0;

  constructor(
    region: string,
    private readonly onAppend: (entry: ControlLogEntry) => void,
  ) {
    super(region);
  }

  override async append(event: ControlEvent, expectedLastSeq: number, signer?: ControlSigner): Promise<number> {
    const seq = await super.append(event, expectedLastSeq, signer);
    // In log order, whichever append resumes first.
    for (const entry of await this.readFrom(this.delivered + 1)) {
      if (entry.seq <= this.delivered) continue;
      this.delivered = entry.seq;
      this.onAppend(entry);
    }
    return seq;
  }
}
