import {
  decodeMessage,
  encodeMessage,
  RepairOp,
  repairActivateSpec,
  repairAdmitSpec,
  repairAnswerSpec,
  repairProtectSpec,
  repairSubject,
  repairUnprotectSpec,
  repairViewRequestSpec,
  repairViewSpec,
} from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { RepairPort } from "./repair-port.ts";
import { seqOfAnswer, viewFromWire } from "./repair-wire.ts";

/** How often a remote repair asks again for the replacement's receipts (ms): one request each time. */
const NATS_POLL_MS = 100;

/**
 * The repair port over NATS request/reply: every read and commit is a request on
 * `custody.v1.repair.<volume>.<op>` that the controller of `volume` answers (after checking the
 * request belongs to a repair it handed out). A refusal rejects with ControllerRefusedError
 * carrying the controller's code; no answer in time rejects with the transport's TransportError.
 */
export function natsRepairPort(
  transport: Transport,
  opts: { volume: string; repairId: string; timeoutMs?: number },
): RepairPort {
  const { volume, repairId } = opts;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const ask = async (op: RepairOp, data: Uint8Array): Promise<number> =>
    seqOfAnswer(
      decodeMessage(repairAnswerSpec, (await transport.request(repairSubject(volume, op), data, { timeoutMs })).data),
    );
  return {
    pollMs: NATS_POLL_MS,
    async view(lanes) {
      const reply = await transport.request(
        repairSubject(volume, RepairOp.View),
        encodeMessage(repairViewRequestSpec, { repairId, lanes: [...lanes] }),
        { timeoutMs },
      );
      // A refusal comes back as an answer, not a view.
      try {
        return viewFromWire(decodeMessage(repairViewSpec, reply.data));
      } catch (err) {
        seqOfAnswer(decodeMessage(repairAnswerSpec, reply.data));
        throw err;
      }
    },
    admit: (replacement) => ask(RepairOp.Admit, encodeMessage(repairAdmitSpec, { repairId, replacement })),
    activate: (t) =>
      ask(
        RepairOp.Activate,
        encodeMessage(repairActivateSpec, {
          repairId,
          transferId: t.transferId,
          lane: t.lane,
          fromHolder: t.fromHolder,
          toHolder: t.toHolder,
          ranges: t.ranges.toJSON(),
        }),
      ),
    protect: async (r) =>
      void (await ask(
        RepairOp.Protect,
        encodeMessage(repairProtectSpec, { repairId, id: r.id, lane: r.lane, ranges: r.ranges.toJSON() }),
      )),
    unprotect: async (id) => void (await ask(RepairOp.Unprotect, encodeMessage(repairUnprotectSpec, { repairId, id }))),
  };
}
