import { PolicyInputError } from "./policy-errors.ts";

/**
 * Kinds of shared dependency a site can have besides its place in the region → AZ → host
 * hierarchy. A dependency tag is written `<kind>:<id>`, e.g. `power:feed-a`, `account:aws-prod`.
 */
export const DependencyKind = {
  power: "power",
  link: "link",
  account: "account",
  operator: "operator",
  keyAuthority: "key_authority",
  placementGroup: "placement_group",
  parentRegion: "parent_region",
  controller: "controller",
} as const;
export type DependencyKind = (typeof DependencyKind)[keyof typeof DependencyKind];

const DEP_KINDS = new Set<string>(Object.values(DependencyKind));
/** Prefixes a loss domain may use: the hierarchy levels plus every dependency kind. */
const DOMAIN_KINDS = new Set<string>(["site", "region", "az", "host", ...DEP_KINDS]);

/** A place where holders run: one host in one AZ in one region, plus its dependency tags. */
export interface Site {
  readonly id: string;
  readonly region: string;
  readonly az: string;
  readonly host: string;
  /** A cluster placement group: locality inside ONE AZ, never a separate failure domain. */
  readonly placementGroup?: string | undefined;
  /** Dependency tags `<kind>:<id>`. */
  readonly deps: readonly string[];
}

/** Throws PolicyInputError unless `tag` is `<known kind>:<non-empty id>`. */
export function checkDependencyTag(tag: string, field: string): void {
  const i = tag.indexOf(":");
  if (i <= 0 || i === tag.length - 1 || !DEP_KINDS.has(tag.slice(0, i))) {
    throw new PolicyInputError(
      field,
      `dependency tag "${tag}" must be <kind>:<id> with kind one of ${[...DEP_KINDS].join(", ")}`,
    );
  }
}

/** Throws PolicyInputError unless `domain` is `<site|region|az|host|dependency kind>:<id>`. */
export function checkLossDomain(domain: string, field: string): void {
  const i = domain.indexOf(":");
  if (i <= 0 || i === domain.length - 1 || !DOMAIN_KINDS.has(domain.slice(0, i))) {
    throw new PolicyInputError(
      field,
      `loss domain "${domain}" must be <kind>:<id> with kind one of ${[...DOMAIN_KINDS].join(", ")}`,
    );
  }
}

/**
 * Every failure-domain token a site belongs to: `site:`, `region:`, `az:`, `host:`, its placement
 * group and dependency tags. A loss of any of these tokens reaches the site.
 */
export function siteDomains(site: Site): ReadonlySet<string> {
  const out = new Set<string>([`site:${site.id}`, `region:${site.region}`, `az:${site.az}`, `host:${site.host}`]);
  if (site.placementGroup) out.add(`placement_group:${site.placementGroup}`);
  for (const d of site.deps) out.add(d);
  return out;
}

/** The failure domains two sites share (hierarchy levels and dependency tags), sorted. */
export function sharedDomains(a: Site, b: Site): string[] {
  const da = siteDomains(a);
  return [...siteDomains(b)].filter((d) => da.has(d) && !d.startsWith("site:")).sort();
}

/**
 * True when the two sites are independent for a scenario that loses `lostDomains`: no lost
 * domain reaches both. (Sites sharing nothing lost may still share other domains.)
 */
export function independentUnder(a: Site, b: Site, lostDomains: Iterable<string>): boolean {
  const da = siteDomains(a);
  const db = siteDomains(b);
  for (const d of lostDomains) if (da.has(d) && db.has(d)) return false;
  return true;
}

/** True when the sites sit in different AZs. A shared cluster placement group implies the same AZ. */
export function azDiverse(a: Site, b: Site): boolean {
  if (a.placementGroup && a.placementGroup === b.placementGroup) return false;
  return a.az !== b.az;
}

/**
 * Validates a set of sites: unique ids, well-formed tags, each AZ in one region, each host in one
 * AZ, and each cluster placement group inside one AZ (a placement group is never another AZ).
 * Throws PolicyInputError naming the field (`<path>[i].<key>`).
 */
export function validateSites(sites: readonly Site[], path = "sites"): void {
  const ids = new Set<string>();
  const azRegion = new Map<string, string>();
  const hostAz = new Map<string, string>();
  const groupAz = new Map<string, string>();
  sites.forEach((s, i) => {
    if (ids.has(s.id)) throw new PolicyInputError(`${path}[${i}].id`, `duplicate site id "${s.id}"`);
    ids.add(s.id);
    s.deps.forEach((d, j) => checkDependencyTag(d, `${path}[${i}].deps[${j}]`));
    const r = azRegion.get(s.az);
    if (r !== undefined && r !== s.region)
      throw new PolicyInputError(`${path}[${i}].az`, `AZ "${s.az}" is in region "${r}", not "${s.region}"`);
    azRegion.set(s.az, s.region);
    const a = hostAz.get(s.host);
    if (a !== undefined && a !== s.az)
      throw new PolicyInputError(`${path}[${i}].host`, `host "${s.host}" is in AZ "${a}", not "${s.az}"`);
    hostAz.set(s.host, s.az);
    if (s.placementGroup) {
      const g = groupAz.get(s.placementGroup);
      if (g !== undefined && g !== s.az) {
        throw new PolicyInputError(
          `${path}[${i}].placementGroup`,
          `cluster placement group "${s.placementGroup}" spans AZs "${g}" and "${s.az}"; a placement group stays in ` +
            `one AZ`,
        );
      }
      groupAz.set(s.placementGroup, s.az);
    }
  });
}
