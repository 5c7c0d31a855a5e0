import { inFailureDomain } from "./failure-domain.ts";
import { signatureProblem, type ControlTrust } from "./control-trust.ts";
import { RangeSet } from "../lanes/index.ts";
import {
  ControlFenceCode,
  ControlFenceError,
  ControlLogRegressionCode,
  ControlLogRegressionError,
} from "./control-error.ts";
import type { ControlEvent, ControlEventOf } from "./control-event.ts";
import { checkNotHeld, endHold, placeHold, type Holds } from "./control-holds.ts";
import { commitFailover, type Failovers } from "./control-failover.ts";
import { choosePersistence, type PersistenceChoices } from "./control-persistence.ts";
import { checkHolderBound, volumesAfterAdmission } from "./control-scope.ts";
import { checkLeaseHolder, checkRenewal, claimLease, noteHeartbeat } from "./control-lease.ts";
import type { PayloadRepresentation } from "./source-cut.ts";
import { foldSnapshotRecord } from "./control-snapshot.ts";
import {
  HolderStatus,
  INITIAL_CONTROL_STATE,
  isReadableEntry,
  isSnapshotRecord,
  type ControlLogEntry,
  type ControlLogRecord,
  type ControlState,
  type HolderRecord,
  type ObligationRecord,
  type TransferRecord,
} from "./control-records.ts";

export {
  HolderStatus,
  INITIAL_CONTROL_STATE,
  isReadableEntry,
  type ControlLogEntry,
  type ControlLogRecord,
  type ControlState,
  type HolderRecord,
  type ObligationRecord,
  type TransferRecord,
  type UnreadableControlEntry,
} from "./control-records.ts";

/** Sentinel "to the end of the log" for open-ended responsibility. */
export const OPEN_END = Number.MAX_SAFE_INTEGER;

function fail(code: ControlFenceCode, message: string, detail: Record<string, unknown> = {}): never {
  throw new ControlFenceError(code, message, detail);
}

function activeHolder(s: ControlState, holderId: string, role: string): HolderRecord {
  const h = s.holders[holderId];
  if (h === undefined) fail(ControlFenceCode.unknown_holder, `${role} ${holderId} was never admitted`, { holderId });
  if (h.status !== HolderStatus.active)
    fail(ControlFenceCode.holder_not_active, `${role} ${holderId} is ${h.status}`, { holderId, status: h.status });
  return h;
}

function obligationOf(s: ControlState, obligationId: string): ObligationRecord {
  const o = s.obligations[obligationId];
  if (o === undefined)
    fail(ControlFenceCode.unknown_obligation, `obligation ${obligationId} does not exist`, { obligationId });
  return o;
}

const rs = (m: Readonly<Record<string, RangeSet>>, k: string): RangeSet => m[k] ?? RangeSet.EMPTY;

/**
 * Applies one event to `s` and returns the new state, or throws ControlFenceError and changes
 * nothing. Fencing: an event must be prepared under exactly the current epoch and generation.
 * Nothing here reads a clock: a lease expiring or a controller disconnecting cannot release
 * anything; only a committed `release_ranges` does, and released ranges never come back.
 */
export function applyControlEvent(s: ControlState, e: ControlEvent): ControlState {
  if (e.preparedEpoch < s.topologyEpoch)
    fail(ControlFenceCode.stale_epoch, `${e.type} prepared under epoch ${e.preparedEpoch} < ${s.topologyEpoch}`, {
      epoch: e.preparedEpoch,
      current: s.topologyEpoch,
    });
  if (e.preparedGeneration < s.policyGeneration)
    fail(
      ControlFenceCode.stale_generation,
      `${e.type} prepared under generation ${e.preparedGeneration} < ${s.policyGeneration}`,
      { generation: e.preparedGeneration, current: s.policyGeneration },
    );
  if (e.preparedEpoch !== s.topologyEpoch || e.preparedGeneration !== s.policyGeneration) {
    fail(
      ControlFenceCode.fence_mismatch,
      `${e.type} prepared under epoch ${e.preparedEpoch}/generation ${e.preparedGeneration}, which the log never ` +
        `reached`,
      { epoch: e.preparedEpoch, generation: e.preparedGeneration },
    );
  }
  // A controller that is not the lease holder of a volume the event touches was deposed (or never claimed).
  checkLeaseHolder(s, e);
  switch (e.type) {
    case "create_obligation":
      return createObligation(s, e);
    case "admit_holder":
      return admitHolder(s, e);
    case "prepare_transfer":
      return prepareTransfer(s, e);
    case "activate_replacement":
      return activateReplacement(s, e);
    case "release_ranges":
      return releaseRanges(s, e);
    case "release_to_base":
      return releaseToBase(s, e);
    case "retire_holder":
      return retireHolder(s, e);
    case "policy_change":
      return policyChange(s, e);
    case "declare_failure":
      return declareFailure(s, e);
    case "hold_ranges":
      obligationForLane(s, e.volume, e.lane);
      return { ...s, holds: placeHold(s.holds, e) };
    case "end_hold":
      return { ...s, holds: endHold(s.holds, e) };
    case "admit_controller":
      // A re-admission replaces the key and the volumes.
      return {
        ...s,
        controllers: {
          ...s.controllers,
          [e.controllerId]: { publicKey: e.publicKey, ...(e.volumes !== undefined ? { volumes: [...e.volumes] } : {}) },
        },
      };
    case "commit_failover":
      obligationForLane(s, e.volume, e.lane);
      return { ...s, failovers: commitFailover(s.failovers ?? {}, e) };
    case "choose_persistence":
      obligationForLane(s, e.volume, e.lane);
      for (const t of e.targets) if (s.holders[t] !== undefined) checkHolderBound(s, t, e.volume, "persistence target");
      return { ...s, persistence: choosePersistence(s.persistence ?? {}, s.holders, e) };
    case "claim_lease":
      return { ...s, leases: claimLease(s, e) };
    case "renew_lease":
      checkRenewal(s, e);
      return s;
  }
}

function createObligation(s: ControlState, e: ControlEventOf<"create_obligation">): ControlState {
  if (s.obligations[e.obligationId] !== undefined)
    fail(ControlFenceCode.duplicate_id, `obligation ${e.obligationId} already exists`, {
      obligationId: e.obligationId,
    });
  const responsible: Record<string, RangeSet> = {};
  for (const h of e.holders) {
    activeHolder(s, h, "holder");
    checkHolderBound(s, h, e.volume, "holder");
    responsible[h] = RangeSet.of(e.fromSeq, OPEN_END);
  }
  const o: ObligationRecord = {
    obligationId: e.obligationId,
    volume: e.volume,
    lane: e.lane,
    representation: e.representation,
    responsible,
    released: {},
  };
  return { ...s, obligations: { ...s.obligations, [e.obligationId]: o } };
}

function admitHolder(s: ControlState, e: ControlEventOf<"admit_holder">): ControlState {
  const cur = s.holders[e.holderId];
  if (cur !== undefined && e.incarnation <= cur.incarnation) {
    fail(
      ControlFenceCode.stale_incarnation,
      `holder ${e.holderId} incarnation ${e.incarnation} is not newer than ${cur.incarnation}`,
      { holderId: e.holderId, incarnation: e.incarnation, current: cur.incarnation },
    );
  }
  const h: HolderRecord = {
    holderId: e.holderId,
    incarnation: e.incarnation,
    publicKey: e.publicKey,
    failureDomain: e.failureDomain,
    status: HolderStatus.active,
    ...volumesAfterAdmission(cur, e.volumes),
  };
  return { ...s, holders: { ...s.holders, [e.holderId]: h } };
}

function prepareTransfer(s: ControlState, e: ControlEventOf<"prepare_transfer">): ControlState {
  if (s.transfers[e.transferId] !== undefined)
    fail(ControlFenceCode.duplicate_id, `transfer ${e.transferId} already exists`, { transferId: e.transferId });
  const o = obligationOf(s, e.obligationId);
  activeHolder(s, e.toHolder, "successor");
  checkHolderBound(s, e.toHolder, o.volume, "successor");
  if (e.toHolder === e.fromHolder)
    fail(ControlFenceCode.not_responsible, "a transfer needs two different holders", { holderId: e.toHolder });
  if (!rs(o.responsible, e.fromHolder).coversAll(e.ranges)) {
    fail(
      ControlFenceCode.not_responsible,
      `holder ${e.fromHolder} is not responsible for all of ${e.ranges.toString()}`,
      { holderId: e.fromHolder, obligationId: e.obligationId },
    );
  }
  checkNoReappearance(o, e.toHolder, e.ranges);
  const t: TransferRecord = {
    ...pick(e),
    preparedEpoch: e.preparedEpoch,
    preparedGeneration: e.preparedGeneration,
    status: "prepared",
  };
  return { ...s, transfers: { ...s.transfers, [e.transferId]: t } };
}

function pick(e: ControlEventOf<"prepare_transfer">) {
  return {
    transferId: e.transferId,
    obligationId: e.obligationId,
    fromHolder: e.fromHolder,
    toHolder: e.toHolder,
    ranges: e.ranges,
  };
}

function activateReplacement(s: ControlState, e: ControlEventOf<"activate_replacement">): ControlState {
  const t = s.transfers[e.transferId];
  if (t === undefined)
    fail(ControlFenceCode.unknown_transfer, `transfer ${e.transferId} was never prepared`, {
      transferId: e.transferId,
    });
  if (t.status !== "prepared")
    fail(ControlFenceCode.transfer_state, `transfer ${e.transferId} is already ${t.status}`, {
      transferId: e.transferId,
    });
  // A plan prepared under an older epoch/generation cannot be activated under a newer one.
  if (t.preparedEpoch !== s.topologyEpoch)
    fail(ControlFenceCode.stale_epoch, `transfer ${e.transferId} was prepared under epoch ${t.preparedEpoch}`, {
      transferId: e.transferId,
      epoch: t.preparedEpoch,
      current: s.topologyEpoch,
    });
  if (t.preparedGeneration !== s.policyGeneration)
    fail(
      ControlFenceCode.stale_generation,
      `transfer ${e.transferId} was prepared under generation ${t.preparedGeneration}`,
      { transferId: e.transferId, generation: t.preparedGeneration, current: s.policyGeneration },
    );
  activeHolder(s, t.toHolder, "successor");
  const o = obligationOf(s, t.obligationId);
  checkHolderBound(s, t.toHolder, o.volume, "successor");
  checkNoReappearance(o, t.toHolder, t.ranges);
  const responsible = { ...o.responsible, [t.toHolder]: rs(o.responsible, t.toHolder).union(t.ranges) };
  return {
    ...s,
    obligations: { ...s.obligations, [o.obligationId]: { ...o, responsible } },
    transfers: { ...s.transfers, [t.transferId]: { ...t, status: "active" } },
  };
}

function checkNoReappearance(o: ObligationRecord, holderId: string, ranges: RangeSet): void {
  const back = rs(o.released, holderId).intersect(ranges);
  if (!back.isEmpty)
    fail(
      ControlFenceCode.released_range_reappears,
      `${holderId} already released ${back.toString()} of ${o.obligationId}`,
      { holderId, obligationId: o.obligationId, ranges: back.toJSON() },
    );
}

/** The obligation of (volume, lane); throws `unknown_obligation` when there is none. */
function obligationForLane(s: ControlState, volume: string, lane: string): ObligationRecord {
  const o = Object.values(s.obligations).find((x) => x.volume === volume && x.lane === lane);
  if (o === undefined)
    fail(ControlFenceCode.unknown_obligation, `no obligation covers ${volume}/${lane}`, { volume, lane });
  return o;
}

function releaseRanges(s: ControlState, e: ControlEventOf<"release_ranges">): ControlState {
  const o = obligationOf(s, e.obligationId);
  checkNotHeld(s.holds, o.volume, o.lane, e.holderId, e.ranges);
  if (!s.holders[e.holderId])
    fail(ControlFenceCode.unknown_holder, `holder ${e.holderId} was never admitted`, { holderId: e.holderId });
  checkHolderBound(s, e.holderId, o.volume, "releasing holder");
  for (const r of e.reliesOn) if (s.holders[r] !== undefined) checkHolderBound(s, r, o.volume, "relied-on holder");
  if (e.ranges.isEmpty || !rs(o.responsible, e.holderId).coversAll(e.ranges)) {
    fail(
      ControlFenceCode.not_responsible,
      `holder ${e.holderId} is not responsible for all of ${e.ranges.toString()}`,
      { holderId: e.holderId, obligationId: e.obligationId },
    );
  }
  if (e.reliesOn.length === 0)
    fail(ControlFenceCode.release_not_covered, "a release must name the holders it relies on", {
      holderId: e.holderId,
    });
  for (const r of e.reliesOn) {
    const h = s.holders[r];
    // Ordered evaluation is what prevents circular release: once A released relying on B, A is no
    // longer responsible, so B's later release relying on A fails here.
    if (
      r === e.holderId ||
      h === undefined ||
      h.status !== HolderStatus.active ||
      !rs(o.responsible, r).coversAll(e.ranges)
    ) {
      fail(
        ControlFenceCode.release_not_covered,
        `release of ${e.ranges.toString()} by ${e.holderId} relies on ${r}, which is not an active holder ` +
          `responsible for those ranges`,
        { holderId: e.holderId, reliesOn: r, obligationId: e.obligationId },
      );
    }
  }
  const next: ObligationRecord = {
    ...o,
    responsible: { ...o.responsible, [e.holderId]: rs(o.responsible, e.holderId).subtract(e.ranges) },
    released: { ...o.released, [e.holderId]: rs(o.released, e.holderId).union(e.ranges) },
  };
  return { ...s, obligations: { ...s.obligations, [o.obligationId]: next } };
}

/**
 * A release a base snapshot justifies: the base's holder must be admitted and active, and every
 * released range must lie at or below the base's cut. The releasing holder may be the base's own
 * holder (a store releasing WAL its own rolling base contains): a base is not releasable custody,
 * so no two releases can rely on each other through it.
 */
function releaseToBase(s: ControlState, e: ControlEventOf<"release_to_base">): ControlState {
  const o = obligationOf(s, e.obligationId);
  checkNotHeld(s.holds, o.volume, o.lane, e.holderId, e.ranges);
  if (!s.holders[e.holderId])
    fail(ControlFenceCode.unknown_holder, `holder ${e.holderId} was never admitted`, { holderId: e.holderId });
  checkHolderBound(s, e.holderId, o.volume, "releasing holder");
  if (e.ranges.isEmpty || !rs(o.responsible, e.holderId).coversAll(e.ranges)) {
    fail(
      ControlFenceCode.not_responsible,
      `holder ${e.holderId} is not responsible for all of ${e.ranges.toString()}`,
      { holderId: e.holderId, obligationId: e.obligationId },
    );
  }
  activeHolder(s, e.baseHolder, "base holder");
  checkHolderBound(s, e.baseHolder, o.volume, "base holder");
  if ((e.ranges.max ?? 0) > e.baseThroughSeq) {
    fail(
      ControlFenceCode.release_not_covered,
      `release of ${e.ranges.toString()} goes beyond base ${e.snapshotId} (through ${e.baseThroughSeq})`,
      { holderId: e.holderId, snapshotId: e.snapshotId },
    );
  }
  const next: ObligationRecord = {
    ...o,
    responsible: { ...o.responsible, [e.holderId]: rs(o.responsible, e.holderId).subtract(e.ranges) },
    released: { ...o.released, [e.holderId]: rs(o.released, e.holderId).union(e.ranges) },
  };
  return { ...s, obligations: { ...s.obligations, [o.obligationId]: next } };
}

function retireHolder(s: ControlState, e: ControlEventOf<"retire_holder">): ControlState {
  const h = activeHolder(s, e.holderId, "holder");
  if (h.incarnation !== e.incarnation)
    fail(
      ControlFenceCode.stale_incarnation,
      `holder ${e.holderId} is at incarnation ${h.incarnation}, not ${e.incarnation}`,
      { holderId: e.holderId },
    );
  for (const o of Object.values(s.obligations)) {
    if (!rs(o.responsible, e.holderId).isEmpty) {
      fail(
        ControlFenceCode.holder_still_responsible,
        `holder ${e.holderId} is still responsible for ${rs(o.responsible, e.holderId).toString()} of ` +
          `${o.obligationId}`,
        { holderId: e.holderId, obligationId: o.obligationId },
      );
    }
  }
  return { ...s, holders: { ...s.holders, [e.holderId]: { ...h, status: HolderStatus.retired } } };
}

function policyChange(s: ControlState, e: ControlEventOf<"policy_change">): ControlState {
  if (
    e.topologyEpoch < s.topologyEpoch ||
    e.policyGeneration < s.policyGeneration ||
    (e.topologyEpoch === s.topologyEpoch && e.policyGeneration === s.policyGeneration)
  ) {
    fail(
      ControlFenceCode.policy_not_advancing,
      `policy change to epoch ${e.topologyEpoch}/generation ${e.policyGeneration} does not advance ` +
        `${s.topologyEpoch}/${s.policyGeneration}`,
      { epoch: e.topologyEpoch, generation: e.policyGeneration },
    );
  }
  return { ...s, topologyEpoch: e.topologyEpoch, policyGeneration: e.policyGeneration };
}

function declareFailure(s: ControlState, e: ControlEventOf<"declare_failure">): ControlState {
  for (const id of e.holderIds)
    if (!s.holders[id]) fail(ControlFenceCode.unknown_holder, `holder ${id} was never admitted`, { holderId: id });
  const holders = { ...s.holders };
  for (const h of Object.values(s.holders)) {
    const inDomain = inFailureDomain(h.failureDomain, e.domain);
    // Failure changes who can back a release; it never releases the failed holder's ranges.
    if ((e.holderIds.includes(h.holderId) || inDomain) && h.status === HolderStatus.active)
      holders[h.holderId] = { ...h, status: HolderStatus.failed };
  }
  return { ...s, holders };
}

/**
 * Folds one committed entry. Throws ControlLogRegressionError `chain_broken` when the event does
 * not name the current head hash or the sequence does not advance (the log is not trustworthy).
 * An event the fold refuses is recorded in `rejected` and changes nothing else, but still becomes
 * the head: every reader refuses the same events, so every reader reaches the same state.
 */
export function foldControlEntry(s: ControlState, entry: ControlLogRecord, trust?: ControlTrust): ControlState {
  if (entry.seq <= s.lastSeq)
    throw new ControlLogRegressionError(
      ControlLogRegressionCode.chain_broken,
      `log sequence ${entry.seq} does not advance past ${s.lastSeq}`,
      { seq: entry.seq, lastSeq: s.lastSeq },
    );
  if (isSnapshotRecord(entry)) return foldSnapshotRecord(s, entry, trust);
  if (!isReadableEntry(entry)) {
    // Junk can change nothing; in a signed log it is skipped like an entry nobody trusted signed.
    if (trust === undefined)
      throw new ControlLogRegressionError(ControlLogRegressionCode.unreadable_entry, entry.unreadable, {
        seq: entry.seq,
      });
    const rejected = { seq: entry.seq, code: ControlFenceCode.unreadable_entry, message: entry.unreadable };
    return { ...s, lastSeq: entry.seq, lastEntryHash: entry.hash, rejected: [...s.rejected, rejected] };
  }
  // In a signed log an entry nobody trusted signed is skipped before the chain is looked at: it
  // changes nothing, and the next accepted event still names the last accepted one.
  const refused = trust === undefined ? undefined : signatureProblem(s, entry, trust);
  if (refused !== undefined)
    return {
      ...s,
      lastSeq: entry.seq,
      lastEntryHash: entry.hash,
      rejected: [...s.rejected, { seq: entry.seq, ...refused }],
    };
  if (entry.event.prevHash !== s.headHash) {
    throw new ControlLogRegressionError(
      ControlLogRegressionCode.chain_broken,
      `event at ${entry.seq} names prevHash ${entry.event.prevHash.slice(0, 12)}…, head is ${s.headHash.slice(0, 12)}…`,
      { seq: entry.seq, prevHash: entry.event.prevHash, headHash: s.headHash },
    );
  }
  let next: ControlState;
  let accepted = true;
  try {
    next = applyControlEvent(s, entry.event);
  } catch (err) {
    if (!(err instanceof ControlFenceError)) throw err;
    accepted = false;
    next = { ...s, rejected: [...s.rejected, { seq: entry.seq, code: err.code, message: err.message }] };
  }
  const { lastEntryHash: _skipped, ...rest } = next;
  // An accepted entry of a lease holder is its heartbeat (a refused one is not).
  const leases = accepted
    ? noteHeartbeat(
        next.leases,
        entry.event.controller,
        entry.seq,
        entry.event.type === "claim_lease" ? entry.event.volume : undefined,
      )
    : next.leases;
  return { ...rest, ...(leases !== undefined ? { leases } : {}), lastSeq: entry.seq, headHash: entry.hash };
}

/**
 * Folds entries (in log order) onto `from` (default: the empty log). With `trust`, only entries
 * signed by a trusted operator or an admitted controller count (see control-trust.ts). Same
 * errors as `foldControlEntry`.
 */
export function foldControlLog(
  entries: Iterable<ControlLogRecord>,
  from: ControlState = INITIAL_CONTROL_STATE,
  trust?: ControlTrust,
): ControlState {
  let s = from;
  for (const e of entries) s = foldControlEntry(s, e, trust);
  return s;
}

/** Ranges the log has released for `holderId` under `obligationId` (its release frontier). */
export function releasedRanges(s: ControlState, obligationId: string, holderId: string): RangeSet {
  return rs(s.obligations[obligationId]?.released ?? {}, holderId);
}

/** True only when a committed `release_ranges` authorizes `holderId` to forget all of `ranges`. */
export function isReleaseAuthorized(
  s: ControlState,
  obligationId: string,
  holderId: string,
  ranges: RangeSet,
): boolean {
  return releasedRanges(s, obligationId, holderId).coversAll(ranges);
}

/** Every holder's release frontier, sorted by obligation then holder. */
export function releaseFrontiers(
  s: ControlState,
): { obligationId: string; volume: string; lane: string; holderId: string; released: RangeSet }[] {
  const out: { obligationId: string; volume: string; lane: string; holderId: string; released: RangeSet }[] = [];
  for (const id of Object.keys(s.obligations).sort()) {
    const o = s.obligations[id]!;
    for (const h of Object.keys(o.released).sort())
      out.push({ obligationId: id, volume: o.volume, lane: o.lane, holderId: h, released: o.released[h]! });
  }
  return out;
}

// the context of a folded state, kept where callers know it from
export { receiptVerifyContext } from "./receipt-verify-context.ts";
