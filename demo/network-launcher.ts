/**
 * Brings a whole deployment up as separate processes: the regions' nats-servers, then the
 * controller, every holder, and the writer, each `node --import tsx demo/actor-process.ts` with its
 * own config file in the run folder. Every process is registered, so one `stopAll()` ends them.
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ActorClient, ActorRole, type ActorProcessConfig } from "./actor-protocol.ts";
import { loadDeployment, type Deployment } from "./deployment.ts";
import { createKeyMaterial, type KeyMaterial } from "./key-material.ts";
import { startRegions, type RegionEndpoint } from "./nats-launcher.ts";
import type { ProcessRegistry } from "./process-registry.ts";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** A running deployment. */
export interface RunningNetwork {
  readonly deployment: Deployment;
  readonly runDir: string;
  readonly regions: Record<string, RegionEndpoint>;
  readonly keys: KeyMaterial;
  /** IPC clients by actor id (holders, the writer, the controller). */
  readonly actors: Map<string, ActorClient>;
  /** Region of every actor id (to kill a region's processes). */
  readonly regionOf: Map<string, string>;
}

/** A fresh `runs/<timestamp>` folder under `root`. */
export function makeRunDir(root = join(REPO_ROOT, "runs")): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const dir = join(root, stamp);
  mkdirSync(join(dir, "logs"), { recursive: true });
  return dir;
}

/**
 * Starts the deployment at `deploymentPath` into `runDir`. Throws DeploymentError, NatsLaunchError
 * or ActorCallError; whatever was started before the failure stays in `registry` for the caller to stop.
 */
export async function launchNetwork(registry: ProcessRegistry, deploymentPath: string, runDir: string): Promise<RunningNetwork> {
  const d = loadDeployment(deploymentPath);
  const localDeployment = join(runDir, "deployment.json");
  copyFileSync(deploymentPath, localDeployment);
  const keysPath = join(runDir, "keys.json");
  const keys = createKeyMaterial(keysPath, d.holders.map((h) => h.id));
  const regions = await startRegions(registry, runDir, d.regions.map((r) => r.name));
  const regionOfSite = new Map(d.sites.map((s) => [s.id, s.region]));
  const actors = new Map<string, ActorClient>();
  const regionOf = new Map<string, string>();

  const start = (role: ActorRole, id: string, region: string): ActorClient => {
    const cfg: ActorProcessConfig = { role, id, deploymentPath: localDeployment, runDir, natsUrl: regions[region]!.url, keysPath };
    const cfgPath = join(runDir, "logs", `${id}.config.json`);
    writeFileSync(cfgPath, JSON.stringify(cfg, null, 2));
    const p = registry.spawn(id, process.execPath, ["--import", "tsx", join(REPO_ROOT, "demo", "actor-process.ts"), "--role", role, "--config", cfgPath], {
      logPath: join(runDir, "logs", `${id}.log`),
      ipc: true,
      cwd: REPO_ROOT,
    });
    const client = new ActorClient(id, p.child);
    actors.set(id, client);
    regionOf.set(id, region);
    return client;
  };

  // The controller and the holders start together (receipts are cumulative: one that arrives before
  // the controller listens is covered by the next); the writer once every holder listens.
  await Promise.all([start(ActorRole.Controller, d.controller.id, d.controller.region).ready, ...d.holders.map((h) => start(ActorRole.Holder, h.id, regionOfSite.get(h.site)!).ready)]);
  await start(ActorRole.Writer, d.writer.id, regionOfSite.get(d.writer.site)!).ready;
  return { deployment: d, runDir, regions, keys, actors, regionOf };
}

/**
 * The strike: SIGKILL every actor process of `regions` and their nats-servers in one synchronous
 * sweep (no event-loop turn between the signals, so nothing more leaves any of them), then wait
 * until all are gone. Returns the actors killed.
 */
export async function strikeRegions(registry: ProcessRegistry, net: RunningNetwork, regions: readonly string[]): Promise<string[]> {
  const struck = new Set(regions);
  const victims = [...net.regionOf].filter(([, r]) => struck.has(r)).map(([id]) => id);
  const names = [...victims, ...regions.map((r) => net.regions[r]!.processName)];
  const gone = names.map((n) => registry.kill(n));
  await Promise.all(gone);
  for (const id of victims) net.actors.delete(id);
  return victims;
}

/** Asks every live actor to stop cleanly (flushing its spans); the registry's stopAll is the backstop. */
export async function stopActors(net: RunningNetwork): Promise<void> {
  await Promise.all([...net.actors.values()].map((c) => c.call("stop", {}, 3000).catch(() => undefined)));
}
