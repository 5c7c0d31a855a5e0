import { failoverSubject } from "../../transport/protocol/index.ts";
import type { InboundMessage, Transport, TransportSubscription } from "../../transport/index.ts";
import type { FailoverPlan } from "./failover.ts";
import type { FailoverRequest } from "./failover-request-check.ts";

/**
 * The controller's side of the failover request (issue #18): a new writer or the operator asks on
 * `custody.v1.failover.<volume>` (transport/security/ lets only the volume's writer and the operator
 * publish there). The machine's step checks and answers it (controller-requests.ts); this commits
 * the requests it accepts (`commit`, see failover.ts) one at a time, so two copies of the same
 * request cannot both pass the check before either commits.
 */
export class FailoverService {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly d: {
      readonly volume: string;
      readonly transport: Transport;
      readonly commit: (req: FailoverRequest) => Promise<FailoverPlan>;
    },
  ) {}

  /** Subscribes the volume's failover requests; each is handed to `deliver` (the controller machine). */
  subscribe(deliver: (msg: InboundMessage) => void): TransportSubscription {
    return this.d.transport.subscribe(failoverSubject(this.d.volume), deliver);
  }

  /** Commits `req` after the requests before it. */
  commit(req: FailoverRequest): Promise<FailoverPlan> {
    const next = this.queue.then(() => this.d.commit(req));
    this.queue = next.catch(() => undefined);
    return next;
  }
}
