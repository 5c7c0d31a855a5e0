import { createPublicKey } from "node:crypto";
import type { SpillEvidence, SpillSet } from "../../arena/index.ts";
import { unitRecordBytes } from "../../arena/index.ts";
import { decodeSegment } from "../../arena/index.ts";
import { encodeAdmissionRequest } from "../../custody/index.ts";
import { rawPublicKey } from "../../custody/index.ts";
import { UnitVerdict } from "../../lanes/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { admitSubject } from "../../transport/protocol/index.ts";
import { laneKey } from "./holder-config.ts";
import { failureDomainOf } from "../../custody/index.ts";
import type { HolderContext } from "./holder-context.ts";
import type { HolderLane } from "./holder-lane.ts";
import type { PreservedUnit } from "./holder-ports.ts";
import { authenticateDecoded } from "./unit-authentication.ts";

/**
 * What a holder does when it starts again: take back what survived the previous incarnation, and
 * ask to be admitted as the new one.
 * - Disk: every spill record the stream recovers is custody again (a disk-backed holder may defer
 *   replay for ever and still hold a complete recoverable WAL). Its units are adopted at disk
 *   residency, receipted under the new incarnation, served to fetch and repair, forwarded to edges
 *   that lack them, and released by frontier like any other range.
 * - Protected RAM: units the platform preserved are re-admitted to RAM — only when the hold-up
 *   evidence says the preservation path completed.
 * Nothing recovered is trusted blindly: every unit's digest is checked again (and, where the holder
 * knows writer keys, the writer attestation kept with it), and a unit that does not fit the lane's
 * log (overlap, older term beyond a newer one) is counted and left out.
 */

/** Re-admits every spill record of a served lane; returns the sequences taken back per lane key. */
export async function adoptSpillRecords(
  h: HolderContext,
  spill: SpillSet,
  recovered: readonly {
    info: { volume: string; lane: string; offset: number; length: number };
    evidence: SpillEvidence;
  }[],
): Promise<Map<string, RangeSet>> {
  const out = new Map<string, RangeSet>();
  // Older records first: units of one lane then reach its log in sequence (and term) order.
  const records = [...recovered].sort((a, b) => a.info.offset - b.info.offset);
  for (const r of records) {
    const key = laneKey(r.info.volume, r.info.lane);
    const hl = h.lanes.get(key);
    if (hl === undefined) {
      h.counters.inc("restart_spill_foreign_lane");
      void spill.release(r.evidence);
      continue;
    }
    try {
      const { body } = await spill.read(r.evidence);
      const units = decodeSegment(body).units;
      if (!units.every((u) => fits(hl, u))) {
        h.counters.inc("restart_spill_conflict");
        void spill.release(r.evidence);
        continue;
      }
      const seqs = hl.adoptSpilled(body, r.evidence);
      // Range by range: a segment's units need not be contiguous (a unit lost on the wire and
      // re-sent later lands in a later segment), and the hole is not ours to receipt.
      for (const run of seqs.ranges()) hl.obligations.admit(run.first, run.last);
      hl.obligations.persisted(seqs);
      hl.lastDiskEvidence = r.evidence;
      out.set(key, (out.get(key) ?? RangeSet.EMPTY).union(seqs));
      h.counters.inc("restart_spill_adopted_units", units.length);
    } catch (err) {
      h.counters.inc(`restart_spill_${(err as { code?: string }).code ?? "unreadable"}`);
    }
  }
  return out;
}

/** True when `u` is new to the lane and would be accepted by its log (no overlap, no fenced term). */
function fits(hl: HolderLane, u: TransportUnit): boolean {
  try {
    return hl.log.classify(u) !== UnitVerdict.duplicate;
  } catch {
    return false;
  }
}

/** Re-admits units the platform preserved in protected RAM; returns how many were taken back. */
export function adoptPreserved(h: HolderContext, units: readonly PreservedUnit[]): number {
  let n = 0;
  for (const u of [...units].sort((a, b) => a.firstSeq - b.firstSeq)) {
    const key = laneKey(u.volume, u.lane);
    const hl = h.lanes.get(key);
    if (hl === undefined || !fits(hl, u)) {
      h.counters.inc("restart_preserved_skipped");
      continue;
    }
    const bytes = unitRecordBytes(u);
    const got = hl.reserve(bytes);
    if (got < bytes) {
      hl.forfeit(got);
      h.counters.inc("restart_preserved_no_space");
      continue;
    }
    // Where the holder checks units, the token the region kept must still list the unit (else it
    // is left out, counted): then it is stored with it, so the unit goes on as the writer's.
    const { attestation, ...unit } = u;
    const verdict = authenticateDecoded(h.ports.writerKeys, attestation === undefined ? [] : [attestation], [
      unit,
    ])?.[0];
    if (verdict !== undefined && !verdict.ok) {
      hl.forfeit(bytes);
      h.counters.inc(`restart_preserved_${verdict.code}`);
      continue;
    }
    // The lane's arena actor checks every unit's digest again before it stores it.
    const r = hl.admit(unit, attestation);
    if (r.kind !== "stored") {
      hl.forfeit(bytes);
      h.counters.inc("restart_preserved_skipped");
      continue;
    }
    n++;
  }
  for (const hl of h.lanes.values()) hl.seal();
  h.counters.inc("restart_preserved_units", n);
  return n;
}

/**
 * Publishes this incarnation's signed admission request unless the control log (as the peer
 * directory knows it) already admitted it. Returns true when a request went out.
 */
export function requestAdmission(h: HolderContext): boolean {
  const { config, ports: io } = h;
  if (io.peers.incarnation(config.holderId) === config.incarnation) return false;
  const publicKey = rawPublicKey(createPublicKey(io.privateKey));
  const req = {
    holderId: config.holderId,
    incarnation: config.incarnation,
    publicKey,
    failureDomain: failureDomainOf(config.site),
    at: Math.floor(io.clock.now()),
  };
  io.transport.publish(admitSubject(config.holderId), encodeAdmissionRequest(req, io.privateKey));
  h.counters.inc("admission_requested");
  return true;
}
