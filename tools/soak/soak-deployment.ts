/**
 * The soak's deployment: its sites and holders, each role's config file, the controller and base
 * builder started side by side, and the operator's stop order. soak-run.ts runs and measures it.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ControllerConfig } from "../../actors/index.ts";
import type { Site } from "../../policies/index.ts";
import {
  harnessControllerConfig,
  harnessSite,
  RoleProcess,
  writeHolderRole,
  writeWriterRole,
} from "../../test/kit/index.ts";

export const VOLUME = "vol-soak";
export const LANE = "l0";
export const BLOCKS = 4096;
export const REGION = "ctl";
export const MB = 1024 * 1024;

export type SoakNats = { servers: string; maxReconnectAttempts: number; reconnectTimeWaitMs: number };

export const site = harnessSite;
export const SITES: Record<string, Site> = {
  "s-w": site("s-w", "east", "east-az1"),
  "s-ram1": site("s-ram1", "east", "east-az2"),
  "s-ram2": site("s-ram2", "west", "west-az1"),
  "s-store": site("s-store", "west", "west-az2"),
  "s-v": site("s-v", "vault", "vault-az1"),
};
/**
 * holder → [site, region, upstream, downstream, disk]: writer → ram1 → ram2 (RAM chain across
 * regions), writer → store (disk).
 */
export const HOLDERS: Record<string, [string, string, string[], string[], boolean]> = {
  "h-ram1": ["s-ram1", "east", ["w1"], ["h-ram2"], false],
  "h-ram2": ["s-ram2", "west", ["h-ram1"], [], false],
  "h-store": ["s-store", "west", ["w1"], [], true],
};

export function controllerConfig(): ControllerConfig {
  const holderSites = Object.fromEntries(Object.entries(HOLDERS).map(([h, [s]]) => [h, s]));
  const c = harnessControllerConfig({
    controllerId: "ctl-soak",
    controlRegion: REGION,
    evalIntervalMs: 50,
    volume: VOLUME,
    lane: LANE,
    sites: SITES,
    holderSites,
    powerLossRegions: ["east", "west"],
    releasable: Object.keys(HOLDERS),
    durable: Object.keys(HOLDERS).filter((h) => HOLDERS[h]![4]),
  });
  // Every pair of sites linked (as `custody init` links a deployment's): each scenario's recovery
  // time is bounded, so its verdict says met exactly while it loses nothing (verdict_flaps).
  const ids = Object.keys(SITES);
  const links = ids.flatMap((a) =>
    ids
      .filter((b) => b !== a)
      .map((b) => ({ id: `${a}-${b}`, from: a, to: b, bandwidthBytesPerSec: 125_000_000, deps: [] })),
  );
  return { ...c, topology: { ...c.topology, links } };
}

/** Each holder's role file and process (not started yet, added to `procs`); the RAM holders apart. */
export function holderRoles(dir: string, nats: (region: string) => SoakNats, cwd: string, procs: RoleProcess[]) {
  const admitted: { id: string; site: Site; publicKey: Uint8Array }[] = [];
  const ramHolders: RoleProcess[] = [];
  for (const [id, [s, region, upstream, downstream, disk]] of Object.entries(HOLDERS)) {
    const overrides = {
      arena: {
        segmentBytes: 256 * 1024,
        limitBytes: 64 * MB,
        maxOutstandingCredit: 4 * MB,
        maxUnitBytes: 128 * 1024,
      },
      ...(disk ? { flush: { intervalMs: 100, deadlineMs: 5_000, rotateBytes: 16 * MB } } : {}),
    };
    const { file, publicKey } = writeHolderRole(
      dir,
      { id, site: SITES[s]!, nats: nats(region), volume: VOLUME, lane: LANE, upstream, downstream, disk, overrides },
      REGION,
    );
    admitted.push({ id, site: SITES[s]!, publicKey });
    const holder = new RoleProcess("holder", file, cwd);
    procs.push(holder);
    if (!disk) ramHolders.push(holder);
  }
  return { admitted, ramHolders };
}

/** The base builder beside the store: a base every `baseEvery` new sequences, at most two such per build. */
export function writeBuilderRole(dir: string, nats: SoakNats, dataKeyFile: string, baseEvery: number): string {
  const builderFile = join(dir, "base-builder.json");
  writeFileSync(
    builderFile,
    JSON.stringify({
      role: "base-builder",
      nats,
      holder: "h-store",
      volume: VOLUME,
      lane: LANE,
      blockCount: BLOCKS,
      dir: join(dir, "bases"),
      dataKeyFile,
      intervalMs: 2_000,
      minNewSeqs: baseEvery,
      maxSeqsPerBuild: 2 * baseEvery,
      buildTimeoutMs: 120_000,
    }),
  );
  return builderFile;
}

/** The writer: 4 KiB writes at `rate`/s, queue depth 8, to the first RAM holder and the store. */
export function writeSoakWriter(dir: string, nats: SoakNats, dataKeyFile: string, rate: number): string {
  const holderSites = Object.fromEntries(Object.entries(HOLDERS).map(([h, [s]]) => [h, SITES[s]!]));
  return writeWriterRole(
    join(dir, "writer.json"),
    {
      nats,
      stateDir: join(dir, "w1"),
      dataKeyFile,
      volume: VOLUME,
      lane: LANE,
      blockCount: BLOCKS,
      firstHops: ["h-ram1", "h-store"],
      holderSites,
      workload: { intervalMs: 0, depth: 8, ratePerSec: rate },
    },
    REGION,
  );
}

/**
 * Starts the controller and the base builder (added to `procs`). They need only the holders (and
 * the log): they start side by side.
 */
export async function startControllerAndBuilder(
  dir: string,
  nats: (region: string) => SoakNats,
  cwd: string,
  procs: RoleProcess[],
  dataKeyFile: string,
  baseEvery: number,
): Promise<void> {
  const ctlFile = join(dir, "controller.json");
  writeFileSync(ctlFile, JSON.stringify({ role: "controller", nats: nats("east"), controller: controllerConfig() }));
  const ctl = new RoleProcess("controller", ctlFile, cwd);
  procs.push(ctl);
  const builderFile = writeBuilderRole(dir, nats("west"), dataKeyFile, baseEvery);
  const builder = new RoleProcess("base-builder", builderFile, cwd);
  procs.push(builder);
  await Promise.all([ctl.start(), builder.start()]);
}

/**
 * As an operator stops it: the writer first (it drains to custody), then the RAM holders while
 * the controller and the store still run (a RAM holder drains by the log releasing what the
 * store persisted; stopped together, each waited out its drain deadline), then the rest.
 */
export async function stopAsAnOperator(
  writer: RoleProcess,
  ramHolders: RoleProcess[],
  procs: RoleProcess[],
): Promise<void> {
  await writer.stop();
  await Promise.all(ramHolders.map((p) => p.stop()));
  await Promise.all(procs.map((p) => p.stop()));
}
