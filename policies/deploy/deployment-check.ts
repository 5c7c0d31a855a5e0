import { z } from "zod";
import { issueText, reportedIssue } from "../../core/index.ts";
import { checkCoalescedSections } from "./deployment-coalesced.ts";
import { controlClusterName } from "./control-cluster-name.ts";
import { controlLogTopology } from "./control-servers.ts";
import { DeploymentError, deploymentSchema, type Deployment } from "./deployment-schema.ts";

/**
 * Reading a deployment file: its shape (deployment-schema.ts), then the cross-reference checks the
 * shape cannot express. Kept apart from the schema because these checks use the control-log
 * topology and the coalesced sections, which themselves read the schema's types.
 */

/** The first schema issue as "unknown key a.b" or "a.b: message", and its path. */
function describeIssue(error: z.ZodError): { what: string; path: string } {
  const issue = reportedIssue(error.issues);
  return { what: issueText(issue), path: issue.path.join(".") };
}

/** Validates a parsed deployment file: its shape, then its cross-references. Throws DeploymentError naming the path. */
export function parseDeployment(raw: unknown): Deployment {
  const r = deploymentSchema.safeParse(raw);
  if (!r.success) {
    const { what, path } = describeIssue(r.error);
    throw new DeploymentError(`invalid deployment: ${what}`, { path });
  }
  checkDeployment(r.data);
  return r.data;
}

/** Stops the check at the first problem, naming its path. */
function fail(path: string, message: string): never {
  throw new DeploymentError(`invalid deployment: ${path}: ${message}`, { path });
}

/** The region `r` named at `path`, which must be declared. */
function region(d: Deployment, path: string, r: string): string {
  return d.regions[r] === undefined ? fail(path, `unknown region ${r}`) : r;
}

/** The site `s` named at `path`, which must be declared. */
function site(d: Deployment, path: string, s: string): string {
  return d.sites[s] === undefined ? fail(path, `unknown site ${s}`) : s;
}

/** Cross-reference checks the shape cannot express. */
function checkDeployment(d: Deployment): void {
  checkRegions(d);
  const holderIds = checkHolders(d);
  checkStandbys(d);
  checkCoalescedSections(d, fail);
  checkServedLanes(d);
  checkVolumes(d, holderIds);
  (d.network.shapedLinks ?? []).forEach((l, i) => {
    site(d, `network.shapedLinks.${i}.from`, l.from);
    site(d, `network.shapedLinks.${i}.to`, l.to);
    if (l.from === l.to) fail(`network.shapedLinks.${i}`, "a leg joins two different sites");
  });
  const volumeIds = new Set(d.volumes.map((v) => v.id));
  d.controllers.forEach((c, i) => {
    if (!volumeIds.has(c.volume)) fail(`controllers.${i}.volume`, `unknown volume ${c.volume}`);
    region(d, `controllers.${i}.region`, c.region);
  });
  checkBaseBuilders(d);
}

/** The regions, and the control log's place among them. */
function checkRegions(d: Deployment): void {
  const regions = Object.keys(d.regions);
  if (regions.length === 0) fail("regions", "at least one region");
  if (d.controlLog?.replicas === 3 && regions.length < 3)
    fail("controlLog.replicas", `3 replicas need 3 regions (the deployment has ${regions.length})`);
  if (d.regions[controlClusterName(d.controlRegion)] !== undefined)
    fail("regions", `region ${controlClusterName(d.controlRegion)} has the name of the control log's cluster`);
  // A control server runs on its region's host: none of its ports may be one of the region server's.
  const control = controlLogTopology(d);
  for (const c of control.replicated ? control.servers : []) {
    const r = d.regions[c.region]!;
    const taken = new Set([r.port, r.httpPort, r.clusterPort, r.gatewayPort]);
    const mine = [c.port, c.httpPort, c.clusterPort, c.gatewayPort];
    if (mine.some((p) => taken.has(p)) || new Set(mine).size !== mine.length)
      fail(
        `regions.${c.region}.controlServer`,
        `the control server's ports ${mine.join(", ")} clash with each other ` +
          `or with the region server's ${[...taken].join(", ")} (declare controlServer)`,
      );
  }
}

/** Holder ids (distinct, none a writer's), their places, and the peers of their lanes; returns the ids. */
function checkHolders(d: Deployment): Set<string> {
  const holderIds = new Set<string>();
  d.holders.forEach((h, i) => {
    if (holderIds.has(h.id)) fail(`holders.${i}.id`, `duplicate holder ${h.id}`);
    holderIds.add(h.id);
    site(d, `holders.${i}.site`, h.site);
    region(d, `holders.${i}.region`, h.region);
  });
  const volumeIds = new Set(d.volumes.map((v) => v.id));
  if (volumeIds.size !== d.volumes.length) fail("volumes", "duplicate volume id");
  const writerIds = new Set(d.volumes.map((v) => v.writer.id));
  for (const w of writerIds) if (holderIds.has(w)) fail("volumes", `writer ${w} has a holder's id`);
  d.holders.forEach((h, i) =>
    h.lanes.forEach((l, j) => {
      const v = d.volumes.find((x) => x.id === l.volume);
      if (v === undefined) return fail(`holders.${i}.lanes.${j}.volume`, `unknown volume ${l.volume}`);
      for (const u of l.upstream)
        if (u !== v.writer.id && !holderIds.has(u))
          fail(`holders.${i}.lanes.${j}.upstream`, `unknown holder or writer ${u}`);
      for (const u of l.downstream)
        if (!holderIds.has(u)) fail(`holders.${i}.lanes.${j}.downstream`, `unknown holder ${u}`);
    }),
  );
  return holderIds;
}

/** A standby holds nothing until it is enlisted: nothing may send to it or build on it. */
function checkStandbys(d: Deployment): void {
  const standbys = new Set(d.holders.filter((h) => h.standby === true).map((h) => h.id));
  const notStandby = (path: string, h: string, why: string) =>
    standbys.has(h) ? fail(path, `${h} is a standby (${why})`) : h;
  d.holders.forEach((h, i) =>
    h.lanes.forEach((l, j) =>
      l.downstream.forEach((x) =>
        notStandby(`holders.${i}.lanes.${j}.downstream`, x, "nothing forwards to a holder the log has not admitted"),
      ),
    ),
  );
  d.volumes.forEach((v, i) => {
    (v.lanes ?? []).forEach((l, j) =>
      l.firstHops.forEach((h) =>
        notStandby(`volumes.${i}.lanes.${j}.firstHops`, h, "the writer sends only to admitted holders"),
      ),
    );
    (v.genesisBases ?? []).forEach((h) =>
      notStandby(`volumes.${i}.genesisBases`, h, "it holds nothing until it is enlisted"),
    );
  });
  d.baseBuilders.forEach((b, i) =>
    notStandby(`baseBuilders.${i}.holder`, b.holder, "it holds nothing until it is enlisted"),
  );
}

/** A holder serves a lane it declares or a derived lane of a volume's coalesced stream. */
function checkServedLanes(d: Deployment): void {
  const coalescedHolderIds = new Set(d.volumes.flatMap((v) => v.coalesced?.holders ?? []));
  d.holders.forEach((h, i) => {
    if (h.lanes.length === 0 && !coalescedHolderIds.has(h.id))
      fail(
        `holders.${i}.lanes`,
        `holder ${h.id} serves no lane (declare one, or name it in a volume's coalesced.holders)`,
      );
  });
}

/** Each volume's writer, sites, lanes and the holders it names. */
function checkVolumes(d: Deployment, holderIds: Set<string>): void {
  d.volumes.forEach((v, i) => {
    site(d, `volumes.${i}.writer.site`, v.writer.site);
    region(d, `volumes.${i}.writer.region`, v.writer.region);
    site(d, `volumes.${i}.recoverySite`, v.recoverySite);
    (v.keyAuthorities ?? []).forEach((k, j) => site(d, `volumes.${i}.keyAuthorities.${j}`, k));
    (v.scenarios ?? []).forEach(
      (x, j) => x.destination !== undefined && site(d, `volumes.${i}.scenarios.${j}.destination`, x.destination),
    );
    (v.lanes ?? []).forEach((l, j) => {
      if (l.toLba < l.fromLba || l.toLba >= v.blockCount)
        fail(`volumes.${i}.lanes.${j}`, `LBAs ${l.fromLba}..${l.toLba} outside 0..${v.blockCount - 1}`);
      for (const h of l.firstHops)
        if (!holderIds.has(h)) fail(`volumes.${i}.lanes.${j}.firstHops`, `unknown holder ${h}`);
    });
    for (const h of v.releasable ?? []) if (!holderIds.has(h)) fail(`volumes.${i}.releasable`, `unknown holder ${h}`);
    for (const h of v.genesisBases ?? [])
      if (!holderIds.has(h)) fail(`volumes.${i}.genesisBases`, `unknown holder ${h}`);
  });
}

/** A base builder reads a disk holder's WAL of a lane that holder serves. */
function checkBaseBuilders(d: Deployment): void {
  d.baseBuilders.forEach((b, i) => {
    const h = d.holders.find((x) => x.id === b.holder);
    if (h === undefined) return fail(`baseBuilders.${i}.holder`, `unknown holder ${b.holder}`);
    if (h.residency !== "disk")
      fail(`baseBuilders.${i}.holder`, `holder ${b.holder} keeps no disk (a base builder reads a store holder's WAL)`);
    if (!h.lanes.some((l) => l.volume === b.volume && l.lane === b.lane))
      fail(`baseBuilders.${i}`, `holder ${b.holder} does not serve ${b.volume}/${b.lane}`);
  });
}
