/**
 * A multi-region custody deployment on a real supercluster (us-east, us-west, eu), after the
 * memo's layout: a US-East writer fans out to a same-AZ and an other-AZ RAM holder, an independent
 * waypoint (which forwards to a European store) and a US-West store; a controller commits to a
 * JetStream control log. Holders run in this process, each on its own NATS connection to its
 * region's server; "killing" one stops it and closes its connection (its memory is gone).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startController, type Controller } from "../../actors/controller/controller.ts";
import type { ControllerConfig, RepairConfig, VolumeTopology } from "../../actors/controller/controller-config.ts";
import type { HolderAdmission, RepairLauncher } from "../../actors/controller/controller-core.ts";
import { holderSource, type SurvivorSource } from "../../actors/repair/survivor-source.ts";
import { recoverVolume, type RecoveryBase, type RecoveryResult } from "../../actors/repair/volume-recovery.ts";
import { systemClock } from "../../core/clock.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { rawPublicKey } from "../../custody/signing.ts";
import { failureDomainOf } from "../../custody/failure-domain.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { Site } from "../../policies/topology.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import type { SuperclusterHandle } from "../kit/index.ts";
import type { DeployedProcess } from "../kit/deployed-process.ts";
import { startHolderProcess } from "./role-processes.ts";
import { custodyStdout } from "../kit/custody-cli.ts";
import { e2eHolderConfig, KeyRing, launchHolder, launchWriter, site, tempDir, type LaunchedHolder, type WriterRig } from "./e2e-fixture.ts";

export const LANE = "l0";
export const BLOCKS = 256;

export const SITES: Record<string, Site> = {
  "s-w": site("s-w", "us-east", "use1-az1"),
  "s-e1": site("s-e1", "us-east", "use1-az1"),
  "s-e2": site("s-e2", "us-east", "use1-az2"),
  "s-e3": site("s-e3", "us-east", "use1-az3"),
  "s-nj": site("s-nj", "us-nj", "nj-a"),
  "s-usw": site("s-usw", "us-west", "usw2-a"),
  "s-eu": site("s-eu", "eu", "euw1-a"),
};

/** Holder → [site, NATS region it connects to, upstream senders, downstream edges]. */
export const HOLDERS: Record<string, [string, string, string[], string[]]> = {
  "h-e1": ["s-e1", "us-east", ["w1", "w2"], []],
  "h-e2": ["s-e2", "us-east", ["w1", "w2"], []],
  "h-nj": ["s-nj", "us-east", ["w1", "w2"], ["h-eu"]],
  "h-w": ["s-usw", "us-west", ["w1", "w2"], []],
  "h-eu": ["s-eu", "eu", ["h-nj"], []],
};
export const FIRST_HOPS = ["h-e1", "h-e2", "h-nj", "h-w"];
export const AZ_CONTRACT = { name: "az-loss", losses: ["az:use1-az1"] };

const mesh = Object.keys(SITES).flatMap((a, i) =>
  Object.keys(SITES)
    .slice(i + 1)
    .map((b) => ({ id: `${a}-${b}`, from: a, to: b, bandwidthBytesPerSec: 125_000_000, deps: [] })),
);

/** The controller's view of the volume. */
export function topologyFor(volume: string): VolumeTopology {
  const holderSites: Record<string, string> = { "h-e3": "s-e3" };
  for (const [h, [s]] of Object.entries(HOLDERS)) holderSites[h] = s;
  return {
    volume,
    lanes: [LANE],
    writerSite: "s-w",
    sites: Object.values(SITES),
    holderSites,
    bases: [
      { id: "genesis-usw", holder: "h-w", cut: { [LANE]: 0 }, bytes: 0 },
      { id: "genesis-eu", holder: "h-eu", cut: { [LANE]: 0 }, bytes: 0 },
    ],
    keyAuthorities: [{ id: "ka-eu", site: "s-eu" }],
    links: mesh,
    recovery: { destination: "s-eu", detectSec: 5, authorizeSec: 1, acquireCapacitySec: 2, persistSec: 1, validateSec: 1 },
    scenarios: [
      { name: "AZ use1-az1 lost", losses: [{ domain: "az:use1-az1", kind: "site_destruction" }], deadlineSec: 600, required: true, destination: "s-usw" },
      { name: "US-East lost", losses: [{ domain: "region:us-east", kind: "site_destruction" }], deadlineSec: 900, required: true },
      {
        name: "US-East and US-West lost",
        losses: [
          { domain: "region:us-east", kind: "site_destruction" },
          { domain: "region:us-west", kind: "site_destruction" },
        ],
        deadlineSec: 1800,
        required: true,
      },
    ],
    timelines: [
      {
        name: "East, then West during replay",
        minIntervalSec: 60,
        deadlineSec: 1800,
        required: false,
        events: [
          { afterSec: 0, losses: [{ domain: "region:us-east", kind: "site_destruction" }] },
          { afterSec: 60, losses: [{ domain: "region:us-west", kind: "site_destruction" }] },
        ],
      },
    ],
    staleAfterMs: 10_000,
    releasable: ["h-e1", "h-e2"],
  };
}

export interface Deployment {
  readonly volume: string;
  readonly keys: KeyRing;
  readonly authority: KeyAuthority;
  readonly holders: Map<string, LaunchedHolder>;
  /** The holders run as processes (`processes` option), for the test to signal. */
  readonly processes: Map<string, DeployedProcess>;
  readonly writer: WriterRig;
  readonly controller: Controller;
  readonly urls: Record<string, string>;
  /**
   * The controller's config as a `custody run controller` role config file (its topology: what
   * `custody recover --controller-config` and `custody status` read for the volume's sites).
   */
  readonly controllerConfigFile: string;
  /** Region token of the deployment's control log (holder and writer processes follow it). */
  readonly controlRegion: string;
  /** Kills a holder: stops it and closes its connection; its RAM is gone. */
  kill(holderId: string): Promise<void>;
  /** The operator declares a holder, or every active holder of a zone, failed (`custody holder fail`); resolves with the entry's control-log sequence. */
  declareFailure(failed: { holder: string } | { domain: string }): Promise<{ seq: number }>;
  /** Starts a replacement holder (not yet admitted) and returns its admission record. */
  startReplacement(holderId: string, siteId: string): Promise<HolderAdmission>;
  survivors(): SurvivorSource[];
  /** Stops the controller and starts a fresh one (same id, config and launcher) that replays the control log. */
  restartController(): Promise<Controller>;
  /** Recovers the volume at `siteName` from `sources` (+ optional base); the key comes from the key authority. */
  recover(siteName: string, sources: readonly SurvivorSource[], opts?: { base?: RecoveryBase; upTo?: Record<string, number> }): Promise<{ dir: string; result: RecoveryResult }>;
  stop(): Promise<void>;
}

function admission(keys: KeyRing, holderId: string, s: Site): HolderAdmission {
  return { holderId, incarnation: 1, publicKey: rawPublicKey(keys.key(holderId, 1)!), failureDomain: failureDomainOf(s) };
}

/** Starts holders, a writer and a controller for a fresh volume on the supercluster. */
export async function deploy(
  sc: SuperclusterHandle,
  volume: string,
  ctlRegion: string,
  opts: {
    releasable?: string[];
    /** Holders that never run here (the test may start them itself); only their key is made. */
    external?: string[];
    /** Holders run as `custody run holder` processes, started before the operator's bootstrap admits their first incarnation. */
    processes?: string[];
    repair?: RepairConfig;
    coverageRepair?: ControllerConfig["coverageRepair"];
    /** Controller settings beyond the defaults (e.g. `spend`), and a change to its topology (e.g. scenarios). */
    controller?: Partial<Pick<ControllerConfig, "spend" | "retentionAudit" | "routes">>;
    /** Test-only holder faults by holder id (e.g. `{ "h-w": { dropRetained: true } }`). */
    holderFaults?: Record<string, { dropRetained: boolean }>;
    topology?: (t: VolumeTopology) => VolumeTopology;
  } = {},
): Promise<Deployment> {
  const urls = Object.fromEntries(Object.entries(sc.regions).map(([k, r]) => [k, r.url]));
  const keys = new KeyRing();
  const authority = new KeyAuthority("ka-eu", "s-eu");
  const holders = new Map<string, LaunchedHolder>();
  for (const [id, [siteId, region, upstream, downstream]] of Object.entries(HOLDERS)) {
    // External holders run as their own processes (the test starts them); only their key is made here.
    if (opts.external?.includes(id) || opts.processes?.includes(id)) keys.add(id, 1);
    else holders.set(id, await launchHolder(urls[region]!, keys, e2eHolderConfig(id, SITES[siteId]!, volume, [{ lane: LANE, upstream, downstream }], opts.holderFaults?.[id] ? { faults: opts.holderFaults[id] } : {})));
  }
  const ctlTransport = await NatsTransport.connect({ servers: urls["us-east"]!, name: `ctl-${volume}` });
  const { log: store } = await initJetStreamControlLog(ctlTransport.connection, { region: ctlRegion });
  // As in a deployment: the holder processes open the control log and claim incarnation 1, then the bootstrap admits them.
  const processes = new Map<string, DeployedProcess>();
  for (const id of opts.processes ?? []) {
    const [siteId, region, upstream, downstream] = HOLDERS[id]!;
    processes.set(id, await startHolderProcess({ url: urls[region]!, controlRegion: ctlRegion }, e2eHolderConfig(id, SITES[siteId]!, volume, [{ lane: LANE, upstream, downstream }]), keys.privateKey(id)));
  }
  // The repair launcher is bound late: it starts standby holders through the deployment below.
  let dep: Deployment | undefined;
  const repair: RepairLauncher = { prepare: (s) => dep!.startReplacement(s.holderId, s.site) };
  const topology = { ...topologyFor(volume), releasable: opts.releasable ?? ["h-e1", "h-e2"] };
  const ctlConfig = { controllerId: "ctl-east", region: ctlRegion, topology: opts.topology?.(topology) ?? topology, evalIntervalMs: 50, repair: opts.repair, coverageRepair: opts.coverageRepair, ...opts.controller };
  const controller = await startController(ctlConfig, { transport: ctlTransport, clock: systemClock, store, repair });
  const controllerConfigFile = join(tempDir("custody-ctl-config-"), "config.json");
  writeFileSync(controllerConfigFile, JSON.stringify({ role: "controller", nats: { servers: urls["us-east"]! }, controller: ctlConfig }));
  let current = controller;
  const all = Object.keys(HOLDERS);
  await controller.bootstrap(
    all.map((h) => admission(keys, h, SITES[HOLDERS[h]![0]]!)),
    all,
  );
  const holderSites: Record<string, Site> = { "h-e3": SITES["s-e3"]! };
  for (const [h, [s]] of Object.entries(HOLDERS)) holderSites[h] = SITES[s]!;
  const writer = await launchWriter({
    url: urls["us-east"]!,
    writerId: "w1",
    volume,
    blockCount: BLOCKS,
    lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: FIRST_HOPS }],
    contracts: [AZ_CONTRACT],
    sites: holderSites,
    keys,
    authority,
  });
  dep = {
    volume,
    keys,
    authority,
    holders,
    processes,
    writer,
    controller,
    urls,
    controllerConfigFile,
    controlRegion: ctlRegion,
    async declareFailure(failed) {
      const target = "holder" in failed ? ["--holder", failed.holder] : ["--domain", failed.domain];
      const out = JSON.parse(await custodyStdout(["holder", "fail", "--server", urls["us-east"]!, "--region", ctlRegion, ...target, "--json"])) as { controlSeq: number };
      return { seq: out.controlSeq };
    },
    async kill(id) {
      const h = holders.get(id);
      holders.delete(id);
      await h?.close();
    },
    async startReplacement(id, siteId) {
      const s = SITES[siteId]!;
      const h = await launchHolder(urls[s.region] ?? urls["us-east"]!, keys, e2eHolderConfig(id, s, volume, [{ lane: LANE, upstream: ["w2"] }]));
      holders.set(id, h);
      return admission(keys, id, s);
    },
    survivors: () => [...holders.values()].map((h) => holderSource(h.holder)),
    async restartController() {
      current.stop();
      current = await startController(ctlConfig, { transport: ctlTransport, clock: systemClock, store, repair });
      return current;
    },
    async recover(siteName, sources, opts = {}) {
      const principal = `recovery-${siteName}`;
      authority.authorize(volume, principal);
      const units = sources.flatMap((s) => s.units(volume, LANE, RangeSet.of(0, Number.MAX_SAFE_INTEGER)));
      const dir = join(tempDir(`custody-recover-${siteName}-`), "vol");
      const result = await recoverVolume({ volume, dir, blockCount: BLOCKS, lanes: [LANE], dataKey: authority.dataKey(volume, principal), units, base: opts.base, upTo: opts.upTo });
      return { dir, result };
    },
    async stop() {
      if (current !== controller) current.stop();
      controller.stop();
      await writer.close().catch(() => undefined);
      for (const h of holders.values()) await h.close().catch(() => undefined);
      for (const p of processes.values()) await p.signal("SIGKILL", 10_000);
      await ctlTransport.close();
    },
  };
  return dep;
}
