import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import {
  decodeMessage,
  encodeMessage,
  failoverAnswerSpec,
  failoverRequestSpec,
  failoverSubject,
  parseSubjectOf,
} from "../../transport/protocol/index.ts";
import type { InboundMessage, Transport, TransportSubscription } from "../../transport/index.ts";
import type { FailoverPlan } from "./failover.ts";
import { FailoverRequestRefusedError, type FailoverRequest } from "./failover-request-check.ts";

/**
 * The controller's side of the failover request (issue #18): a new writer or the operator asks on
 * `custody.v1.failover.<volume>` (transport/security/ lets only the volume's writer and the operator
 * publish there) and the controller answers with the plan it committed (`commit`, see failover.ts)
 * or a typed refusal. A refused or malformed request is answered with its code, counted
 * (`failover_request_<code>`) and commits nothing. Requests are answered one at a time, so two
 * copies of the same request cannot both pass the check before either commits.
 */
export class FailoverService {
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly d: {
      readonly volume: string;
      readonly transport: Transport;
      readonly counters: Counters;
      readonly commit: (req: FailoverRequest) => Promise<FailoverPlan>;
    },
  ) {}

  /** Subscribes the volume's failover requests; each is handed to `deliver` (the controller machine). */
  subscribe(deliver: (msg: InboundMessage) => void): TransportSubscription {
    return this.d.transport.subscribe(failoverSubject(this.d.volume), deliver);
  }

  /** Answers one request after those before it (never rejects: a failure is the answer). */
  handle(msg: InboundMessage): Promise<void> {
    this.queue = this.queue.then(() => this.answer(msg));
    return this.queue;
  }

  private async answer(msg: InboundMessage): Promise<void> {
    try {
      const { volume } = parseSubjectOf("failover", msg.subject);
      const req = decodeMessage(failoverRequestSpec, msg.data);
      if (req.volume !== volume)
        throw new FailoverRequestRefusedError(`the request names volume ${req.volume} on the subject of ${volume}`, {
          volume,
        });
      const plan = await this.d.commit(req);
      this.d.counters.inc("failover_request_answered");
      this.d.transport.respond(msg, encodeMessage(failoverAnswerSpec, { ok: true, plan }));
    } catch (err) {
      const code = err instanceof CustodyError ? err.code : "failover_request_failed";
      this.d.counters.inc(`failover_request_${code.replace(/^failover_request_/, "")}`);
      this.d.transport.respond(
        msg,
        encodeMessage(failoverAnswerSpec, {
          ok: false,
          code: code.slice(0, 64),
          message: (err instanceof Error ? err.message : String(err)).slice(0, 1024),
        }),
      );
    }
  }
}
