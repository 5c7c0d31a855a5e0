import type { RangeSet } from "../../lanes/index.ts";
import type { RepairPort, RepairView } from "../repair/index.ts";
import { obligationIdOf } from "../../transport/protocol/index.ts";
import type { ControllerHandle } from "./controller-handle.ts";

/** How often an in-process repair looks again for the replacement's receipts (ms): a memory read. */
const IN_PROCESS_POLL_MS = 10;

/**
 * The repair port of a repair running inside its controller's process (the controller's own child
 * repairs, the simulator): reads come straight from the folded state and the ledger, commits go
 * through the controller's serialized, fenced `commit`. The controller's NATS repair service answers
 * a remote repair with the same reads and commits (repair-service.ts), after checking the request.
 */
export function inProcessRepairPort(core: ControllerHandle): RepairPort {
  return {
    pollMs: IN_PROCESS_POLL_MS,
    view: (lanes) => Promise.resolve(repairViewOf(core, lanes)),
    // The replacement is bound to this controller's volume, so custody of it may move there.
    admit: async (a) =>
      (await core.commit(() => ({ type: "admit_holder", ...a, volumes: [core.config.topology.volume] }))).seq,
    activate: async (t) => {
      const obligationId = obligationIdOf(core.config.topology.volume, t.lane);
      const ranges = core.follower.state.obligations[obligationId]?.responsible[t.fromHolder]?.intersect(t.ranges);
      if (ranges === undefined || ranges.isEmpty) return 0;
      await core.commit(() => ({
        type: "prepare_transfer",
        transferId: t.transferId,
        obligationId,
        fromHolder: t.fromHolder,
        toHolder: t.toHolder,
        ranges,
      }));
      return (await core.commit(() => ({ type: "activate_replacement", transferId: t.transferId }))).seq;
    },
    protect: (r) => Promise.resolve(core.beginRecovery(r)),
    unprotect: (id) => Promise.resolve(core.endRecovery(id)),
  };
}

/** The controller's view of `lanes` of its volume, as a repair reads it (see `RepairPort.view`). */
export function repairViewOf(core: ControllerHandle, lanes: readonly string[]): RepairView {
  const s = core.follower.state;
  const volume = core.config.topology.volume;
  const holders: Record<string, { status: string; incarnation: number }> = {};
  for (const h of Object.values(s.holders)) holders[h.holderId] = { status: h.status, incarnation: h.incarnation };
  const perLane: Record<string, { released: Record<string, RangeSet>; responsible: Record<string, RangeSet> }> = {};
  for (const lane of lanes) {
    const o = s.obligations[obligationIdOf(volume, lane)];
    perLane[lane] = { released: { ...(o?.released ?? {}) }, responsible: { ...(o?.responsible ?? {}) } };
  }
  const holdings = lanes.flatMap((lane) =>
    core.ledger.holdings({ volume, lane }).map((h) => ({
      holderId: h.holderId,
      incarnation: h.incarnation,
      lane,
      retained: h.retained,
      issuedAt: h.issuedAt,
    })),
  );
  return {
    holders,
    lanes: perLane,
    holdings,
    staleAfterMs: core.config.topology.staleAfterMs,
    recovery: core.config.topology.recovery,
  };
}
