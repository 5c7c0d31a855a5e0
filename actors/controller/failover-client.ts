import {
  decodeMessage,
  encodeMessage,
  failoverAnswerSpec,
  failoverRequestSpec,
  failoverSubject,
} from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import { ControllerRefusedError } from "../repair/index.ts";
import type { FailoverPlan } from "./failover.ts";

/**
 * Asks the controller of `volume` to record a failover of `req.lanes` to writer term `req.term`
 * from `req.recoveredCut` (what a new writer or the operator does before the new term writes) and
 * resolves with the committed plan: where the new term starts on each lane. A refusal rejects with
 * ControllerRefusedError carrying the controller's code (`failover_request_refused` for bad input,
 * `failover_order` for a term that does not advance); no answer in time rejects with the transport's
 * TransportError (`timeout`, `no_responders`). Asking again with the same request after a lost reply
 * answers the same plan.
 */
export async function requestFailover(
  transport: Transport,
  volume: string,
  req: {
    readonly lanes: readonly string[];
    readonly term: number;
    readonly recoveredCut: Readonly<Record<string, number>>;
  },
  opts: { readonly timeoutMs?: number } = {},
): Promise<FailoverPlan> {
  const body = encodeMessage(failoverRequestSpec, {
    volume,
    lanes: [...req.lanes],
    term: req.term,
    recoveredCut: { ...req.recoveredCut },
  });
  const reply = await transport.request(failoverSubject(volume), body, { timeoutMs: opts.timeoutMs ?? 10_000 });
  const a = decodeMessage(failoverAnswerSpec, reply.data);
  if (!a.ok || a.plan === undefined)
    throw new ControllerRefusedError(
      a.code ?? "failover_request_refused",
      a.message ?? "the controller refused the failover",
    );
  return a.plan;
}
