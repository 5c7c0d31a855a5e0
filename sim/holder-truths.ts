import { holderLaneKey } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import type { HolderTruth } from "./invariants.ts";
import type { HolderHost } from "./sim-host.ts";
import type { WorldSpec } from "./world.ts";

/**
 * Ground truth of every holder host right now (what its running holder physically retains, and
 * where), plus the vault's base snapshot, which covers everything before the first sequence.
 * `ledger` and `granted` are what the controller claimed for and released to each holder.
 */
export function holderTruthsOf(spec: WorldSpec, hosts: Iterable<HolderHost>, ledger: ReadonlyMap<string, RangeSet>, granted: ReadonlyMap<string, RangeSet>): HolderTruth[] {
  const key = holderLaneKey(spec.volume, spec.lane);
  const out: HolderTruth[] = [];
  for (const h of hosts) {
    const ob = h.holder?.core.lanes.get(key)?.obligations;
    const disk = ob?.diskResident ?? RangeSet.EMPTY;
    out.push({
      id: h.spec.id,
      site: h.site.id,
      ram: ob === undefined ? RangeSet.EMPTY : ob.retained.subtract(disk),
      disk,
      ramSurvivesPower: h.spec.protectedRam && h.evidenceValid,
      released: ob?.released ?? RangeSet.EMPTY,
      ledger: ledger.get(h.spec.id) ?? RangeSet.EMPTY,
      granted: granted.get(h.spec.id) ?? RangeSet.EMPTY,
    });
  }
  out.push({ id: spec.vault.holder, site: spec.vault.site, ram: RangeSet.EMPTY, disk: RangeSet.of(0, 0), ramSurvivesPower: false, released: RangeSet.EMPTY, ledger: RangeSet.EMPTY, granted: RangeSet.EMPTY });
  return out;
}
