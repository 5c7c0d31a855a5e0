import type { PreservedRam, PreservedUnit } from "../actors/index.ts";
import { RangeSet } from "../lanes/index.ts";
import type { TransportUnit } from "../lanes/index.ts";

/**
 * The simulated platform's preserved memory of one protected-RAM host (NVDIMM or battery-backed
 * DRAM): what the holder mirrors into it survives a crash or power loss only when the host's
 * hold-up evidence is valid at that instant — the world decides at the crash (`crash`), the next
 * incarnation reads what survived (`recovered`).
 */
export class SimPreservedRam implements PreservedRam {
  private units = new Map<string, PreservedUnit>();

  async recovered(): Promise<readonly PreservedUnit[]> {
    return [...this.units.values()].sort((a, b) => a.firstSeq - b.firstSeq);
  }

  keep(unit: TransportUnit, attestation?: string): void {
    const copy = {
      ...unit,
      commitTs: [...unit.commitTs],
      payload: new Uint8Array(unit.payload),
      digest: new Uint8Array(unit.digest),
    };
    // The writer's attestation is preserved with the unit, so the next incarnation can pass it on.
    this.units.set(
      `${unit.volume}/${unit.lane}/${unit.firstSeq}`,
      attestation === undefined ? copy : { ...copy, attestation },
    );
  }

  forget(volume: string, lane: string, seqs: RangeSet): void {
    for (const [k, u] of this.units)
      if (u.volume === volume && u.lane === lane && seqs.covers(u.firstSeq, u.lastSeq)) this.units.delete(k);
  }

  /** The host went down: the region keeps its contents only if the preservation path worked. */
  crash(preserved: boolean): void {
    if (!preserved) this.units = new Map();
  }

  /** Units held (for checks). */
  get held(): RangeSet {
    let r = RangeSet.EMPTY;
    for (const u of this.units.values()) r = r.add(u.firstSeq, u.lastSeq);
    return r;
  }
}
