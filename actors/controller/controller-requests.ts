import { CustodyError } from "../../core/index.ts";
import {
  decodeMessage,
  encodeMessage,
  failoverAnswerSpec,
  failoverRequestSpec,
  parseSubjectOf,
  repairAnswerSpec,
} from "../../transport/protocol/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import { count, type ControllerEffect } from "./controller-effects.ts";
import type { FailoverPlan } from "./failover.ts";
import { FailoverRequestRefusedError, type FailoverRequest } from "./failover-request-check.ts";
import { RepairRequestRefusedError } from "./repair-request-check.ts";

/**
 * The controller's answers to requests, as pure functions from the request (and, once its work is
 * done, the outcome) to effects: a failover request of a new writer or the operator (issue #18) and
 * the requests of repairs handed to a worker. A refused or malformed request is answered with its
 * code and counted (`failover_request_<code>`, `repair_request_<code>`), and commits nothing; an
 * accepted one becomes an effect whose outcome comes back as an event (`failover.committed`,
 * `repair.answered`, or `….failed`), answered in turn here.
 */

export type RequestEvent =
  /** A failover request on `custody.v1.failover.<volume>`. */
  | { type: "nats.failover"; msg: InboundMessage }
  | { type: "failover.committed"; msg: InboundMessage; plan: FailoverPlan }
  | { type: "failover.failed"; msg: InboundMessage; code: string; message: string }
  /** A request of a repair handed to a worker, on `custody.v1.repair.<volume>.<op>`. */
  | { type: "nats.repair"; msg: InboundMessage }
  | { type: "repair.answered"; msg: InboundMessage; payload: Uint8Array }
  | { type: "repair.failed"; msg: InboundMessage; code: string; message: string };

export interface RequestStep {
  readonly effects: readonly ControllerEffect[];
  /** The code of a request refused before any work. */
  readonly refused?: string;
}

/** The error's code and message, as an answer states them. */
export function failureOf(err: unknown, otherwise: string): { code: string; message: string } {
  return {
    code: err instanceof CustodyError ? err.code : otherwise,
    message: err instanceof Error ? err.message : String(err),
  };
}

export function answerRequest(volume: string, e: RequestEvent): RequestStep {
  switch (e.type) {
    case "nats.failover":
      return askFailover(e.msg);
    case "failover.committed":
      return {
        effects: [
          count("failover_request_answered"),
          { type: "respond", msg: e.msg, payload: encodeMessage(failoverAnswerSpec, { ok: true, plan: e.plan }) },
        ],
      };
    case "failover.failed":
      return { effects: refusal("failover", e.msg, e.code, e.message) };
    case "nats.repair":
      return askRepair(volume, e.msg);
    case "repair.answered":
      return { effects: [count("repair_request_answered"), { type: "respond", msg: e.msg, payload: e.payload }] };
    case "repair.failed":
      return { effects: refusal("repair", e.msg, e.code, e.message) };
  }
}

/** A failover request that names the volume of its subject is committed (one at a time); anything else refused. */
function askFailover(msg: InboundMessage): RequestStep {
  let request: FailoverRequest;
  try {
    const { volume } = parseSubjectOf("failover", msg.subject);
    request = decodeMessage(failoverRequestSpec, msg.data);
    if (request.volume !== volume)
      throw new FailoverRequestRefusedError(`the request names volume ${request.volume} on the subject of ${volume}`, {
        volume,
      });
  } catch (err) {
    const { code, message } = failureOf(err, "failover_request_failed");
    return { effects: refusal("failover", msg, code, message), refused: code };
  }
  return { effects: [{ type: "commitFailover", msg, request }] };
}

/** A repair request on this volume's subject is answered by the repair service; another volume's is refused. */
function askRepair(volume: string, msg: InboundMessage): RequestStep {
  let op: string;
  try {
    const subject = parseSubjectOf("repair", msg.subject);
    if (subject.volume !== volume) throw new RepairRequestRefusedError("another volume", { volume: subject.volume });
    op = subject.op;
  } catch (err) {
    const { code, message } = failureOf(err, "repair_request_failed");
    return { effects: refusal("repair", msg, code, message), refused: code };
  }
  return { effects: [{ type: "answerRepair", msg, op }] };
}

/** The count and the answer of a refused or failed request. */
function refusal(kind: "failover" | "repair", msg: InboundMessage, code: string, message: string): ControllerEffect[] {
  const spec = kind === "failover" ? failoverAnswerSpec : repairAnswerSpec;
  const body = { ok: false, code: code.slice(0, 64), message: message.slice(0, 1024) };
  return [
    count(`${kind}_request_${code.replace(new RegExp(`^${kind}_request_`), "")}`),
    { type: "respond", msg, payload: encodeMessage(spec, body) },
  ];
}
