import type { ControlEvent } from "../custody/index.ts";
import { InMemoryControlLog } from "../custody/index.ts";

/** The region's control log of the simulated world; tells `onAdmit` of every admission committed to it (by the controller's policy or an operator). */
export class TracedControlLog extends InMemoryControlLog {
  constructor(
    region: string,
    private readonly onAdmit: (holderId: string, incarnation: number) => void,
  ) {
    super(region);
  }

  override async append(event: ControlEvent, expectedLastSeq: number): Promise<number> {
    const seq = await super.append(event, expectedLastSeq);
    if (event.type === "admit_holder") this.onAdmit(event.holderId, event.incarnation);
    return seq;
  }
}
