import { holderLaneKey } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import type { HolderTruth } from "./invariants.ts";
import type { HolderHost } from "./sim-host.ts";
import type { WorldSpec } from "./world.ts";

/**
 * Ground truth of every holder host right now (what its running holder physically retains, and
 * where), plus the vault's base snapshot, which covers everything before the first sequence.
 * `ledger` and `granted` are what the controller claimed for and released to each holder;
 * `committed` what the control log released at it.
 */
export function holderTruthsOf(
  spec: WorldSpec,
  hosts: Iterable<HolderHost>,
  ledger: ReadonlyMap<string, RangeSet>,
  granted: ReadonlyMap<string, RangeSet>,
  committed: (holderId: string) => RangeSet,
): HolderTruth[] {
  const key = holderLaneKey(spec.volume, spec.lane);
  const out: HolderTruth[] = [];
  for (const h of hosts) {
    const ob = h.holder?.lane(spec.volume, spec.lane);
    const { ram, disk } = ob === undefined ? NOTHING_HELD : residencyOf(h, ob.retained, ob.diskResident);
    out.push({
      id: h.spec.id,
      site: h.site.id,
      ram,
      disk,
      ramSurvivesPower: h.spec.protectedRam && h.evidenceValid,
      released: ob?.released ?? RangeSet.EMPTY,
      ledger: ledger.get(h.spec.id) ?? RangeSet.EMPTY,
      granted: granted.get(h.spec.id) ?? RangeSet.EMPTY,
      committed: committed(h.spec.id),
    });
  }
  out.push({
    id: spec.vault.holder,
    site: spec.vault.site,
    ram: RangeSet.EMPTY,
    disk: VAULT_BASE,
    ramSurvivesPower: false,
    released: RangeSet.EMPTY,
    ledger: RangeSet.EMPTY,
    granted: RangeSet.EMPTY,
    committed: RangeSet.EMPTY,
  });
  return out;
}

/** The vault's base snapshot: everything before the first sequence. */
const VAULT_BASE = RangeSet.of(0, 0);

const NOTHING_HELD = { retained: RangeSet.EMPTY, disk: RangeSet.EMPTY, ram: RangeSet.EMPTY };

// The last residency split per host. RangeSets are immutable and the runner re-checks a holder only
// when one of its sets is a different object, so an unchanged holder must yield the same objects
// (and its RAM part need not be recomputed every clock step).
const lastSplit = new WeakMap<HolderHost, { retained: RangeSet; disk: RangeSet; ram: RangeSet }>();

function residencyOf(h: HolderHost, retained: RangeSet, disk: RangeSet): { ram: RangeSet; disk: RangeSet } {
  const last = lastSplit.get(h);
  if (last !== undefined && last.retained === retained && (last.disk === disk || last.disk.equals(disk))) return last;
  const next = { retained, disk, ram: retained.subtract(disk) };
  lastSplit.set(h, next);
  return next;
}

/** The writer's own copy as ground truth: `retained` (its outbox on disk and its RAM retention) counts as disk. */
export function writerTruthOf(writer: { readonly id: string; readonly site: string }, retained: RangeSet): HolderTruth {
  const none = RangeSet.EMPTY;
  return {
    id: writer.id,
    site: writer.site,
    ram: none,
    disk: retained,
    ramSurvivesPower: false,
    released: none,
    ledger: none,
    granted: none,
    committed: none,
  };
}
