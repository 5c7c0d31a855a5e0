import type { EvaluationState } from "./evaluation-state.ts";
import { PolicyInputError, UnknownReferenceError } from "./policy-errors.ts";
import { checkDependencyTag, checkLossDomain, validateSites } from "./topology.ts";
import type { Loss } from "./scenario.ts";

function unique(ids: readonly string[], path: string): Set<string> {
  const seen = new Set<string>();
  ids.forEach((id, i) => {
    if (seen.has(id)) throw new PolicyInputError(`${path}[${i}].id`, `duplicate id "${id}"`);
    seen.add(id);
  });
  return seen;
}

function checkLosses(losses: readonly Loss[], path: string): void {
  losses.forEach((l, i) => checkLossDomain(l.domain, `${path}[${i}].domain`));
}

/** Checks that a name refers to a known lane, site or holder (throwing UnknownReferenceError naming `field`). */
interface ReferenceChecks {
  lane(lane: string, field: string): void;
  site(site: string, field: string): void;
  holder(holder: string, field: string): void;
}

/** Validates the sites, holder ids, lanes and source site, and returns the checks of references to them. */
function referenceChecks(s: EvaluationState): ReferenceChecks {
  validateSites(s.sites);
  const sites = new Set(s.sites.map((x) => x.id));
  const holders = unique(
    s.holders.map((h) => h.id),
    "holders",
  );
  const lanes = new Set(Object.keys(s.source.lanes));
  if (lanes.size === 0) throw new PolicyInputError("source.lanes", "at least one lane is required");
  if (!sites.has(s.source.site)) throw new UnknownReferenceError("source.site", s.source.site);
  return {
    lane(l: string, f: string) {
      if (!lanes.has(l)) throw new UnknownReferenceError(f, l);
    },
    site(x: string, f: string) {
      if (!sites.has(x)) throw new UnknownReferenceError(f, x);
    },
    holder(x: string, f: string) {
      if (!holders.has(x)) throw new UnknownReferenceError(f, x);
    },
  };
}

/** Holders' sites and claims, bases and manifests. */
function checkHoldings(s: EvaluationState, refs: ReferenceChecks): void {
  s.holders.forEach((h, i) => {
    refs.site(h.site, `holders[${i}].site`);
    h.coalesced?.forEach((c, j) => refs.lane(c.lane, `holders[${i}].coalesced[${j}].lane`));
    h.claims.forEach((c, j) => {
      refs.lane(c.lane, `holders[${i}].claims[${j}].lane`);
      // Evidence newer than the snapshot cannot have been observed: a clock or input error.
      if (c.evidence.atMs > s.asOfMs)
        throw new PolicyInputError(
          `holders[${i}].claims[${j}].evidence.atMs`,
          `evidence from the future (${c.evidence.atMs} > asOfMs ${s.asOfMs})`,
        );
    });
  });
  unique(
    s.bases.map((b) => b.id),
    "bases",
  );
  s.bases.forEach((b, i) => {
    refs.holder(b.holder, `bases[${i}].holder`);
    for (const l of Object.keys(b.cut)) refs.lane(l, `bases[${i}].cut.${l}`);
  });
  const manifests = (
    list: readonly { holders: readonly string[]; cut: Readonly<Record<string, number>> }[],
    field: string,
  ) =>
    list.forEach((m, i) => {
      m.holders.forEach((h, j) => refs.holder(h, `${field}[${i}].holders[${j}]`));
      for (const l of Object.keys(m.cut)) refs.lane(l, `${field}[${i}].cut.${l}`);
    });
  manifests(s.manifests, "manifests");
  manifests(s.coalescedManifests ?? [], "coalescedManifests");
}

/** Key authorities, the metadata quorum and links. */
function checkInfrastructure(s: EvaluationState, refs: ReferenceChecks): void {
  s.keyAuthorities.forEach((k, i) => refs.site(k.site, `keyAuthorities[${i}].site`));
  s.metadataQuorum?.members.forEach((m, i) => refs.site(m, `metadataQuorum.members[${i}]`));
  if (s.metadataQuorum && s.metadataQuorum.quorum > s.metadataQuorum.members.length) {
    throw new PolicyInputError("metadataQuorum.quorum", "quorum exceeds the number of members");
  }
  s.links.forEach((l, i) => {
    refs.site(l.from, `links[${i}].from`);
    refs.site(l.to, `links[${i}].to`);
    l.deps.forEach((d, j) => checkDependencyTag(d, `links[${i}].deps[${j}]`));
  });
}

/** Commit runs, the recovery destination, forwards, pins and recoveries. */
function checkDataFlow(s: EvaluationState, refs: ReferenceChecks): void {
  s.commits.forEach((c, i) => {
    refs.lane(c.lane, `commits[${i}].lane`);
    if (c.first > c.last)
      throw new PolicyInputError(`commits[${i}].last`, `run ${c.first}..${c.last} ends before it starts`);
  });
  refs.site(s.recovery.destination, "recovery.destination");
  s.forwards.forEach((f, i) => {
    refs.holder(f.from, `forwards[${i}].from`);
    refs.holder(f.to, `forwards[${i}].to`);
    refs.lane(f.lane, `forwards[${i}].lane`);
  });
  s.pins.forEach((p, i) => {
    refs.holder(p.holder, `pins[${i}].holder`);
    refs.lane(p.lane, `pins[${i}].lane`);
  });
  s.recoveries.forEach((r, i) => {
    refs.lane(r.lane, `recoveries[${i}].lane`);
    r.sources?.forEach((h, j) => refs.holder(h, `recoveries[${i}].sources[${j}]`));
  });
}

/** Scenarios' and timelines' losses, destinations and repair sites. */
function checkScenarios(s: EvaluationState, refs: ReferenceChecks): void {
  s.scenarios.forEach((sc, i) => {
    checkLosses(sc.losses, `scenarios[${i}].losses`);
    if (sc.destination !== undefined) refs.site(sc.destination, `scenarios[${i}].destination`);
  });
  s.timelines.forEach((tl, i) => {
    tl.events.forEach((e, k) => checkLosses(e.losses, `timelines[${i}].events[${k}].losses`));
    if (tl.destination !== undefined) refs.site(tl.destination, `timelines[${i}].destination`);
    if (tl.repair !== undefined) refs.site(tl.repair.site, `timelines[${i}].repair.site`);
  });
}

/** Control-plane members' sites and measured link loads. */
function checkControlPlaneAndLoads(s: EvaluationState, refs: ReferenceChecks): void {
  s.controlPlane?.logReplicas.forEach(
    (m, i) => m.site !== undefined && refs.site(m.site, `controlPlane.logReplicas[${i}].site`),
  );
  s.controlPlane?.controllers.forEach(
    (m, i) => m.site !== undefined && refs.site(m.site, `controlPlane.controllers[${i}].site`),
  );
  s.linkLoads?.forEach((l, i) => {
    if (!s.links.some((x) => x.id === l.link)) throw new UnknownReferenceError(`linkLoads[${i}].link`, l.link);
    refs.site(l.fromSite, `linkLoads[${i}].fromSite`);
  });
}

/**
 * Checks every cross-reference of a state (holder → site, base → holder, lanes, links, quorum,
 * forwards, pins, loss domains). Throws PolicyInputError / UnknownReferenceError naming the field;
 * returns nothing and changes nothing.
 */
export function validateEvaluationState(s: EvaluationState): void {
  const refs = referenceChecks(s);
  checkHoldings(s, refs);
  checkInfrastructure(s, refs);
  checkDataFlow(s, refs);
  checkScenarios(s, refs);
  checkControlPlaneAndLoads(s, refs);
}
