/**
 * The declarative deployment file of the multi-region demo (`examples/deployment.json`): regions
 * and their AZs, sites, holders with their custody edges, the writer, the controller, the key
 * authority and priced, shaped network edges between sites. Loading validates the shape (zod) and
 * every cross reference, so a typo fails with one clear error instead of a hung demo.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { CustodyError, issueText, reportedIssue } from "../../core/index.ts";
import type { VolumeTopology } from "../../actors/index.ts";
import type { Site } from "../../policies/index.ts";
import type { Scenario, Timeline } from "../../policies/index.ts";

/** Thrown for a deployment file that does not parse, fails the schema or references unknown names. */
export class DeploymentError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_deployment", message, detail);
  }
}

// Names end up in NATS subjects and file names: one token, no wildcards or separators.
const token = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a name of letters, digits, '-' or '_'");

const edgeSchema = z.strictObject({
  from: token,
  to: token,
  /** One-way latency added to units sent over this edge. */
  latencyMs: z.number().min(0).max(10_000),
  /** Uniform extra delay in [0, jitterMs). */
  jitterMs: z.number().min(0).max(10_000).default(0),
  /** Serialization rate of the edge; units queue behind each other at this rate. */
  bandwidthMBps: z.number().positive().max(100_000),
  /** Transfer price per billable decimal GB on this leg (0 = free, e.g. same AZ). */
  pricePerGb: z.number().min(0).max(10),
});

/** Zod schema of the deployment file (documented field by field in docs/demo.md). */
export const deploymentSchema = z
  .object({
    $comment: z.string().optional(),
    volume: token,
    /** More volumes written at the same time, on the same holders (one lane each, named `lane`). */
    extraVolumes: z.array(token).max(3).default([]),
    lane: token,
    blocks: z.number().int().min(16).max(65_536),
    regions: z
      .array(z.strictObject({ name: token, azs: z.array(token).min(1).max(8) }))
      .min(2)
      .max(8),
    sites: z
      .array(z.strictObject({ id: token, region: token, az: token }))
      .min(2)
      .max(32),
    writer: z.strictObject({
      id: token,
      site: token,
      holders: z.array(token).min(1).max(10),
      contract: z.strictObject({
        name: token,
        losses: z.array(z.string().min(1).max(128)).min(1),
        copies: z.number().int().min(1).optional(),
      }),
    }),
    holders: z
      .array(
        z.strictObject({
          id: token,
          site: token,
          role: z.string().max(64),
          upstream: z.array(token).min(1),
          downstream: z.array(token).default([]),
          /** The controller may let this holder shed custody (RAM tiers). */
          releasable: z.boolean().default(false),
          /** This store keeps a base snapshot of the volume (it can anchor a recovery). */
          baseSnapshot: z.boolean().default(false),
        }),
      )
      .min(1)
      .max(10),
    controller: z.strictObject({ id: token, region: token }),
    keyAuthority: z.strictObject({ id: token, site: token }),
    recoverAt: token,
    edges: z.array(edgeSchema).min(1).max(128),
    workload: z.strictObject({
      /** Seconds of sustained writing before the strike (full run / `--short`). */
      seconds: z.number().min(1).max(600),
      shortSeconds: z.number().min(1).max(600),
      /** Writes per second on each volume. */
      writesPerSec: z.number().min(1).max(2000),
      /**
       * Writes in flight per volume (issued in order, each acknowledged after its own local sync;
       * more than one lets the volume's group commit and one outbox flush serve many writes).
       */
      inFlight: z.number().int().min(1).max(64).default(1),
      blocksPerWrite: z.number().int().min(1).max(16).default(1),
    }),
    failures: z.strictObject({
      /** Region lost first (the writer's region). */
      first: token,
      /** Region lost with it: the strike takes both at the same instant, mid-stream. */
      second: token,
    }),
    /**
     * What a waypoint is worth, side by side: one more volume with the same write stream, at the
     * same time, whose custody path leaves this holder out (its senders send straight to its
     * downstream holders over the edges the deployment declares).
     */
    waypointComparison: z.strictObject({ holder: token, volume: token }).optional(),
  })
  .strict();

/** A validated deployment. */
export type Deployment = z.infer<typeof deploymentSchema>;
/** One shaped, priced edge between two sites. */
export type DeploymentEdge = z.infer<typeof edgeSchema>;
/** One holder entry of the deployment. */
export type DeploymentHolder = Deployment["holders"][number];

function fail(message: string, detail: Record<string, unknown>): never {
  throw new DeploymentError(`deployment: ${message}`, detail);
}

/** No two regions, sites, holders or volumes share a name. Throws DeploymentError. */
function checkUniqueNames(d: Deployment): void {
  const unique = (what: string, names: string[]) => {
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup !== undefined) fail(`duplicate ${what} ${JSON.stringify(dup)}`, { what, name: dup });
  };
  unique(
    "region",
    d.regions.map((r) => r.name),
  );
  unique(
    "site",
    d.sites.map((s) => s.id),
  );
  unique(
    "holder",
    d.holders.map((h) => h.id),
  );
  unique("volume", [
    d.volume,
    ...d.extraVolumes,
    ...(d.waypointComparison === undefined ? [] : [d.waypointComparison.volume]),
  ]);
}

/**
 * Validates `raw` as a deployment: schema, unique names, and every reference (sites → regions/AZs,
 * holders → sites, edges → sites, writer/holder custody edges → holders). Throws DeploymentError.
 */
export function parseDeployment(raw: unknown): Deployment {
  const parsed = deploymentSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = reportedIssue(parsed.error.issues);
    throw new DeploymentError(`deployment: ${issueText(issue)}`, {
      path: issue.path.map(String),
      issues: parsed.error.issues.length,
    });
  }
  const d = parsed.data;
  checkUniqueNames(d);
  const regions = new Map(d.regions.map((r) => [r.name, r]));
  const sites = new Set(d.sites.map((s) => s.id));
  const holders = new Set(d.holders.map((h) => h.id));
  for (const s of d.sites) {
    const r = regions.get(s.region);
    if (r === undefined) fail(`site ${s.id} names unknown region ${s.region}`, { site: s.id, region: s.region });
    else if (!r.azs.includes(s.az))
      fail(`site ${s.id}: region ${s.region} has no AZ ${s.az}`, { site: s.id, az: s.az });
  }
  const needSite = (where: string, id: string) => {
    if (!sites.has(id)) fail(`${where} names unknown site ${id}`, { where, site: id });
  };
  needSite("writer", d.writer.site);
  needSite("keyAuthority", d.keyAuthority.site);
  needSite("recoverAt", d.recoverAt);
  if (!regions.has(d.controller.region))
    fail(`controller names unknown region ${d.controller.region}`, { region: d.controller.region });
  for (const r of [d.failures.first, d.failures.second])
    if (!regions.has(r)) fail(`failures name unknown region ${r}`, { region: r });
  if (holders.has(d.writer.id)) fail(`writer id ${d.writer.id} collides with a holder`, { id: d.writer.id });
  for (const h of d.holders) {
    needSite(`holder ${h.id}`, h.site);
    for (const u of h.upstream)
      if (u !== d.writer.id && !holders.has(u))
        fail(`holder ${h.id} has unknown upstream ${u}`, { holder: h.id, upstream: u });
    for (const x of h.downstream)
      if (!holders.has(x)) fail(`holder ${h.id} has unknown downstream ${x}`, { holder: h.id, downstream: x });
  }
  for (const h of d.writer.holders) if (!holders.has(h)) fail(`writer sends to unknown holder ${h}`, { holder: h });
  if (d.waypointComparison !== undefined && !holders.has(d.waypointComparison.holder))
    fail(`waypointComparison names unknown holder ${d.waypointComparison.holder}`, {
      holder: d.waypointComparison.holder,
    });
  for (const e of d.edges) {
    needSite("edge", e.from);
    needSite("edge", e.to);
  }
  return d;
}

/** Reads and validates a deployment file. Throws DeploymentError (also for unreadable or non-JSON files). */
export function loadDeployment(path: string): Deployment {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new DeploymentError(`deployment: cannot read ${path}: ${(err as Error).message}`, { path });
  }
  return parseDeployment(raw);
}

/** Every volume of the deployment, the first one first and the waypoint comparison's last. */
export function volumesOf(d: Deployment): string[] {
  return [d.volume, ...d.extraVolumes, ...(d.waypointComparison === undefined ? [] : [d.waypointComparison.volume])];
}

/** Policy-engine site records of the deployment. */
export function sitesOf(d: Deployment): Site[] {
  return d.sites.map((s) => ({ id: s.id, region: s.region, az: s.az, host: `${s.id}-host`, deps: [] }));
}

/**
 * The edge carrying traffic from site `from` to site `to` (either direction of a declared edge);
 * undefined within one site.
 */
export function edgeBetween(d: Deployment, from: string, to: string): DeploymentEdge | undefined {
  return d.edges.find((e) => e.from === from && e.to === to) ?? d.edges.find((e) => e.from === to && e.to === from);
}

/** The site of a holder or of the writer. */
export function siteOfActor(d: Deployment, id: string): string | undefined {
  if (id === d.writer.id) return d.writer.site;
  return d.holders.find((h) => h.id === id)?.site;
}

/** Scenario names the demo reports, in order. */
export function scenarioNames(d: Deployment): { az: string; first: string; both: string; timeline: string } {
  const az = d.sites.find((s) => s.id === d.writer.site)!.az;
  return {
    az: `AZ ${az} lost`,
    first: `${d.failures.first} lost`,
    both: `${d.failures.first} and ${d.failures.second} lost`,
    timeline: `${d.failures.first}, then ${d.failures.second} during replay`,
  };
}

/**
 * The demo's contract: the named scenarios (the writer's AZ; its region; both failure regions at
 * once) and the sequential timeline. One definition for the controllers `custody init` configures
 * and for `topologyOf`. Pure.
 */
export function demoContract(d: Deployment): { scenarios: Scenario[]; timelines: Timeline[] } {
  const names = scenarioNames(d);
  const writerAz = d.sites.find((s) => s.id === d.writer.site)!.az;
  const lose = (domain: string) => ({ domain, kind: "site_destruction" as const });
  const scenarios: Scenario[] = [
    { name: names.az, losses: [lose(`az:${writerAz}`)], deadlineSec: 600, required: true },
    { name: names.first, losses: [lose(`region:${d.failures.first}`)], deadlineSec: 900, required: true },
    {
      name: names.both,
      losses: [lose(`region:${d.failures.first}`), lose(`region:${d.failures.second}`)],
      deadlineSec: 1800,
      required: true,
    },
  ];
  const timelines: Timeline[] = [
    {
      name: names.timeline,
      minIntervalSec: 60,
      deadlineSec: 1800,
      required: false,
      events: [
        { afterSec: 0, losses: [lose(`region:${d.failures.first}`)] },
        { afterSec: 60, losses: [lose(`region:${d.failures.second}`)] },
      ],
    },
  ];
  return { scenarios, timelines };
}

/**
 * Test-only: the running demo's controllers get their topology from `custody init`
 * (tools/demo/custody-deployment.ts → policies/deploy/); this independent derivation of the same view (sites,
 * holders, genesis bases, key authority, links, the demo's named scenarios) lets tests check the
 * example deployment's shape without starting anything. Pure.
 */
export function topologyOf(d: Deployment, volume = d.volume): VolumeTopology {
  const { scenarios, timelines } = demoContract(d);
  return {
    volume,
    lanes: [d.lane],
    writerSite: d.writer.site,
    sites: sitesOf(d),
    holderSites: Object.fromEntries(d.holders.map((h) => [h.id, h.site])),
    bases: d.holders
      .filter((h) => h.baseSnapshot)
      .map((h) => ({ id: `genesis-${h.id}`, holder: h.id, cut: { [d.lane]: 0 }, bytes: 0 })),
    keyAuthorities: [{ id: d.keyAuthority.id, site: d.keyAuthority.site }],
    // A full mesh: recovery may pull from any survivor; undeclared pairs get a nominal 100 MB/s.
    links: d.sites.flatMap((a, i) =>
      d.sites.slice(i + 1).map((b) => ({
        id: `${a.id}-${b.id}`,
        from: a.id,
        to: b.id,
        bandwidthBytesPerSec: (edgeBetween(d, a.id, b.id)?.bandwidthMBps ?? 100) * 1_000_000,
        deps: [],
      })),
    ),
    recovery: {
      destination: d.recoverAt,
      detectSec: 5,
      authorizeSec: 1,
      acquireCapacitySec: 2,
      persistSec: 1,
      validateSec: 1,
    },
    scenarios,
    timelines,
    staleAfterMs: 10_000,
    releasable: d.holders.filter((h) => h.releasable).map((h) => h.id),
  };
}
