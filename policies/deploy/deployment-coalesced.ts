import {
  checkCoalescedStream,
  derivedLaneName,
  WriterConfigError,
  type CoalescedStreamSpec,
} from "../../actors/index.ts";
import type { Deployment, DeploymentHolder, DeploymentVolume } from "./deployment-schema.ts";
import type { CoalescedSection } from "./coalesced-section.ts";

/**
 * A volume's coalesced stream in a deployment (issue #22 item 1): `volumes[].coalesced` names the
 * holders of the derived lanes and the writer's window cadence. The holders do not list the
 * derived lanes themselves: the plan adds one per raw lane to each of them (representation
 * `coalesced`, upstream the writer), so the writer, the holders, the controller, the bootstrap and
 * the NATS permissions all take the same lane names from one place (`derivedLaneName`).
 */

/** The writer's `coalesced` config of a volume's section (keys absent stay absent). */
export function coalescedSpecOf(c: CoalescedSection): CoalescedStreamSpec {
  return Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)) as unknown as CoalescedStreamSpec;
}

/**
 * Raw lane names of a volume as the deployment states them: the declared lanes, else every lane
 * a holder serves for it (the plan refuses more than one later, with its own message).
 */
function rawLaneNames(d: Deployment, v: DeploymentVolume): string[] {
  return v.lanes !== undefined
    ? v.lanes.map((l) => l.lane)
    : [...new Set(d.holders.flatMap((h) => h.lanes.filter((l) => l.volume === v.id).map((l) => l.lane)))];
}

/** The derived lane names of a volume (none without a coalesced section). */
export function derivedLaneNames(d: Deployment, v: DeploymentVolume): string[] {
  const c = v.coalesced;
  return c === undefined ? [] : rawLaneNames(d, v).map((l) => derivedLaneName(c, l));
}

/** Derived lane → raw lane, the controller topology's `coalesced` map. */
export function coalescedTopology(d: Deployment, v: DeploymentVolume): Record<string, string> {
  const c = v.coalesced;
  return c === undefined ? {} : Object.fromEntries(rawLaneNames(d, v).map((l) => [derivedLaneName(c, l), l]));
}

/** One lane a holder serves, with its representation when it is a derived lane. */
export interface ServedLane {
  readonly volume: string;
  readonly lane: string;
  readonly upstream: string[];
  readonly downstream: string[];
  readonly representation?: "coalesced";
}

/**
 * The lanes a holder serves: those it declares, then every derived lane of each volume whose coalesced
 * stream names it.
 */
export function servedLanes(d: Deployment, h: DeploymentHolder): ServedLane[] {
  const derived = d.volumes.flatMap((v) =>
    v.coalesced?.holders.includes(h.id) === true
      ? derivedLaneNames(d, v).map((lane) => ({
          volume: v.id,
          lane,
          upstream: [v.writer.id],
          downstream: [],
          representation: "coalesced" as const,
        }))
      : [],
  );
  return [
    ...h.lanes.map((l) => ({
      volume: l.volume,
      lane: l.lane,
      upstream: [...l.upstream],
      downstream: [...l.downstream],
    })),
    ...derived,
  ];
}

/** The derived lanes as the writer feeds them (for its NATS permissions): each to the stream's holders. */
export function derivedWriterLanes(d: Deployment, v: DeploymentVolume): { lane: string; holders: string[] }[] {
  return derivedLaneNames(d, v).map((lane) => ({ lane, holders: [...(v.coalesced?.holders ?? [])] }));
}

/** The bootstrap's obligations of a volume's derived lanes: the stream's holders answer for them, as coalesced. */
export function derivedObligations(
  d: Deployment,
  v: DeploymentVolume,
): { volume: string; lane: string; holders: string[]; representation: "coalesced" }[] {
  return derivedWriterLanes(d, v).map((l) => ({
    volume: v.id,
    lane: l.lane,
    holders: l.holders,
    representation: "coalesced" as const,
  }));
}

/**
 * The cross-reference checks of every volume's coalesced section: holders known, distinct and not
 * standbys, no holder declaring a derived lane itself, and the writer's own rules on cadence,
 * budgets and derived names (free identifiers that clash with no raw lane).
 */
export function checkCoalescedSections(d: Deployment, fail: (path: string, message: string) => never): void {
  const holders = new Map(d.holders.map((h) => [h.id, h]));
  d.volumes.forEach((v, i) => {
    const c = v.coalesced;
    if (c === undefined) return;
    const path = `volumes.${i}.coalesced`;
    c.holders.forEach((id, j) => {
      const h = holders.get(id);
      if (h === undefined) fail(`${path}.holders.${j}`, `unknown holder ${id}`);
      if (h!.standby === true)
        fail(`${path}.holders.${j}`, `${id} is a standby (the writer sends only to admitted holders)`);
      if (c.holders.indexOf(id) !== j) fail(`${path}.holders.${j}`, `duplicate holder ${id}`);
    });
    // A holder naming a derived lane itself (the plan adds them): said before the clash it makes with the raw names.
    const names = rawLaneNames(d, v);
    // (An empty suffix makes every derived name its raw lane's: that is the writer's clash below.)
    const derived = new Set(c.laneSuffix === "" ? [] : names.map((l) => derivedLaneName(c, l)));
    d.holders.forEach((h, k) =>
      h.lanes.forEach((l, j) => {
        if (l.volume === v.id && derived.has(l.lane))
          fail(
            `holders.${k}.lanes.${j}.lane`,
            `${l.lane} is ${v.id}'s derived lane: ${path}.holders gives it to its holders`,
          );
      }),
    );
    try {
      // Only lane names matter to these rules; LBA ranges are the plan's (volumeLanes).
      const lanes = names.map((lane) => ({ lane, fromLba: 0, toLba: 0, holders: [] }));
      checkCoalescedStream({
        writerId: v.writer.id,
        volume: v.id,
        term: 0,
        lanes,
        contracts: [],
        holderSites: {},
        topologyEpoch: 1,
        policyGeneration: 1,
        coalesced: coalescedSpecOf(c),
      });
    } catch (err) {
      if (err instanceof WriterConfigError) fail(path, err.message);
      throw err;
    }
  });
}
