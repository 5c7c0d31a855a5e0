/**
 * One identity, one process (issue #46 item 2), on real processes (`custody run holder`) and a real
 * nats-server with JetStream:
 * - the same holder config started twice on one machine: the second start exits 5 with one line
 *   naming the first (pid and incarnation), and the first keeps serving;
 * - the same identity started elsewhere (another state directory) while the first runs: the newer
 *   incarnation is admitted, the older learns it from the control log, stops serving and exits 3
 *   (fenced), and custody resting on that holder alone reaches the writer's head again with the
 *   required scenario met — the product refills the new incarnation, no test code re-sends;
 * - a lock left by a SIGKILLed holder does not block its restart.
 *
 * Chain: writer → h1 (RAM) → h2 (RAM). The writer and the controller run in this process; the
 * holders are child processes (SIGKILL-safe: every child is killed at teardown).
 */
import anyTest, { type TestFn } from "ava";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startController, type Controller } from "../../actors/controller/controller.ts";
import type { ControllerConfig } from "../../actors/controller/controller-config.ts";
import { startVolumeWriter } from "../../actors/writer/volume-writer.ts";
import { UnitOutbox } from "../../actors/writer/unit-outbox.ts";
import { lastIncarnation } from "../../actors/holder/incarnation.ts";
import { systemClock } from "../../core/clock.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { ControlLogPeers } from "../../custody/control-peers.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { LossKind, type Site } from "../../policies/index.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { EXIT_FENCED, EXIT_STATE_DIR_LOCKED } from "../../cli/commands/run.ts";
import { currentLock } from "../../actors/runtime/state-dir-lock.ts";
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, e2eHolderConfig, eventually, site, tempDir } from "./e2e-fixture.ts";
import { custodyCommand } from "../kit/custody-command.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const LANE = "l0";
const BLOCKS = 64;
const SITES: Record<string, Site> = {
  "s-w": site("s-w", "r1", "az1"),
  "s-1": site("s-1", "r1", "az1"),
  "s-2": site("s-2", "r1", "az2"),
  /** Holds the genesis base only (no holder process): no scenario reaches it. */
  "s-v": site("s-v", "r1", "az9"),
};
type Chain = Record<string, { site: string; upstream: string[]; downstream: string[] }>;
const CHAIN: Chain = {
  h1: { site: "s-1", upstream: ["w1"], downstream: ["h2"] },
  h2: { site: "s-2", upstream: ["h1"], downstream: [] },
};
/** Only h2 is left when az1 burns: its copy is the whole cut. */
const ONLY_H2 = "az1 destroyed";

interface Exited {
  code: number | null;
  stderr: string;
}
interface Spawned {
  child: ChildProcess;
  ready: Promise<{ pid: number; incarnation: number }>;
  exit: Promise<Exited>;
}

function spawnHolder(t: { context: NatsTestContext }, config: string): Spawned {
  const c = custodyCommand(["run", "holder", "--config", config]);
  const child = spawn(c.command, c.args, { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
  t.context.defer(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr!.on("data", (b) => (stderr += String(b)));
  const exit = new Promise<Exited>((resolve) => child.on("exit", (code) => resolve({ code, stderr })));
  const ready = new Promise<{ pid: number; incarnation: number }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b) => {
      out += String(b);
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as { pid: number; incarnation: number });
    });
    void exit.then(({ code, stderr: e }) => reject(new Error(`holder exited (${code}) before it was ready: ${e}`)));
  });
  ready.catch(() => undefined);
  return { child, ready, exit };
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.on("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

interface Rig {
  dir: string;
  holderFiles: Record<string, string>;
  controller: Controller;
  spawned: Map<string, Spawned>;
  start(id: string): Promise<Spawned>;
  write(n: number): Promise<number>;
  /** The cut of the scenario resting on h2 alone, when observed and met; else -1. */
  metCut(): number;
}

/** h2 alone, fed by the writer: once h2 receipts a unit, the writer forgets it (no upstream can re-send). */
const SOLE: Chain = { h2: { site: "s-2", upstream: ["w1"], downstream: [] } };

async function deploy(t: { context: NatsTestContext; teardown(fn: () => unknown): void }, volume: string, chain: Chain = CHAIN): Promise<Rig> {
  const url = t.context.nats.url;
  const region = `r-${volume}`;
  const dir = tempDir("custody-identity-");
  const keys: Record<string, Uint8Array> = {};
  const holderFiles: Record<string, string> = {};
  for (const [id, h] of Object.entries(chain)) {
    const kp = generateHolderKeyPair();
    keys[id] = kp.publicKey;
    const keyFile = join(dir, `${id}.key`);
    writeFileSync(keyFile, kp.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
    const holder = { ...e2eHolderConfig(id, SITES[h.site]!, volume, [{ lane: LANE, upstream: h.upstream, downstream: h.downstream }], { resendAfterMs: 300 }), incarnation: undefined };
    const cfg = { role: "holder", nats: { servers: url }, controlRegion: region, stateDir: join(dir, id), keyFile, holder };
    holderFiles[id] = join(dir, `${id}.json`);
    writeFileSync(holderFiles[id]!, JSON.stringify(cfg));
  }
  const spawned = new Map<string, Spawned>();
  t.teardown(() => Promise.all([...spawned.values()].map((s) => killed(s.child))));
  const start = async (id: string) => {
    const p = spawnHolder(t, holderFiles[id]!);
    await p.ready;
    spawned.set(id, p);
    return p;
  };
  const ct = await NatsTransport.connect({ servers: url, name: `ctl-${volume}` });
  t.context.defer(() => ct.close());
  const { log: store } = await initJetStreamControlLog(ct.connection, { region });
  await Promise.all(Object.keys(chain).map((id) => start(id)));
  const config: ControllerConfig = {
    controllerId: "ctl",
    region,
    evalIntervalMs: 100,
    admission: "key-continuity",
    coverageRepair: { graceMs: 500, retryMs: 1_000 },
    topology: {
      volume,
      lanes: [LANE],
      writerSite: "s-w",
      sites: Object.values(SITES),
      holderSites: { vault: "s-v", ...Object.fromEntries(Object.entries(chain).map(([id, h]) => [id, h.site])) },
      bases: [{ id: "genesis", holder: "vault", cut: { [LANE]: 0 }, bytes: 0 }],
      keyAuthorities: [{ id: "ka", site: "s-v" }],
      // Every site reaches every other: a scenario's recovery time is bounded, so "met" can be reached.
      links: Object.keys(SITES).flatMap((a) => Object.keys(SITES).filter((b) => b !== a).map((b) => ({ id: `${a}-${b}`, from: a, to: b, bandwidthBytesPerSec: 125_000_000, deps: [] }))),
      recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
      scenarios: [{ name: ONLY_H2, losses: [{ domain: "az:az1", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: true }],
      timelines: [],
      staleAfterMs: 3_000,
      releasable: [],
    },
  };
  const controller = await startController(config, { transport: ct, clock: systemClock, store });
  t.context.defer(() => controller.stop());
  await controller.bootstrap(
    Object.entries(chain).map(([id, h]) => ({ holderId: id, incarnation: 1, publicKey: keys[id]!, failureDomain: `r1/${SITES[h.site]!.az}/${SITES[h.site]!.host}` })),
    Object.keys(chain),
  );

  const wt = await NatsTransport.connect({ servers: url, name: `w1-${volume}` });
  t.context.defer(() => wt.close());
  const vdir = join(dir, "volume");
  await SmartWalVolume.create(vdir, { blockCount: BLOCKS, walCapacity: 4096 });
  const vol = await SmartWalVolume.open(vdir);
  const { outbox } = await UnitOutbox.open(nodeFileLayer, join(dir, "outbox"), systemClock);
  const peers = new ControlLogPeers(new ControlLogFollower(store), systemClock, 500);
  await peers.refresh();
  const writer = startVolumeWriter(
    {
      writerId: "w1",
      volume,
      term: 1,
      lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: Object.keys(chain).filter((id) => chain[id]!.upstream.includes("w1")) }],
      contracts: [],
      holderSites: Object.fromEntries(Object.entries(chain).map(([id, h]) => [id, SITES[h.site]!])),
      topologyEpoch: 1,
      policyGeneration: 1,
      resendAfterMs: 300,
    },
    { transport: wt, clock: systemClock, volume: vol, dataKey: new Uint8Array(32).fill(9), peers, outbox },
  );
  t.context.defer(() => writer.stop());
  let seed = 0;
  return {
    dir,
    holderFiles,
    controller,
    spawned,
    start,
    async write(n) {
      let head = 0;
      for (let i = 0; i < n; i++) {
        const ack = await writer.write((seed * 7) % BLOCKS, blockData(1000 + seed++));
        head = ack.pieces[0]!.seq;
      }
      await writer.sync();
      return head;
    },
    metCut() {
      const r = controller.report()?.reports.find((x) => x.name === ONLY_H2);
      return r !== undefined && r.evidence === "observed" && r.verdict === "met" ? (r.cut?.[LANE] ?? -1) : -1;
    },
  };
}

test.serial("the same holder config started twice: the second exits 5 naming the first's pid and incarnation, and the first keeps serving", async (t) => {
  const r = await deploy(t, "vol-twice");
  const head1 = await r.write(20);
  await eventually(() => r.metCut() >= head1, `h2 alone holds through ${head1}`, 20_000);
  const first = await r.spawned.get("h2")!.ready;

  const second = spawnHolder(t, r.holderFiles.h2!);
  const { code, stderr } = await second.exit;
  t.is(code, EXIT_STATE_DIR_LOCKED);
  const lines = stderr.trim().split("\n");
  t.is(lines.length, 1, `one line: ${stderr}`);
  t.is(lines[0], `error [state_dir_locked]: ${join(r.dir, "h2")} is held by pid ${first.pid} (holder h2 incarnation ${first.incarnation})`);

  // The refused start claimed nothing and asked for nothing: the first is still the one admitted, and serves.
  const head2 = await r.write(20);
  await eventually(() => r.metCut() >= head2, `h2#1 keeps serving through ${head2}`, 20_000);
  t.is(r.controller.controlState().holders.h2?.incarnation, 1);
  t.is(r.spawned.get("h2")!.child.exitCode, null);
  t.is(await lastIncarnation(nodeFileLayer, join(r.dir, "h2")), first.incarnation, "the refused start claimed no incarnation");
});

for (const [name, chain] of [["behind an upstream holder", CHAIN], ["as the writer's only holder", SOLE]] as const)
test.serial(`the same identity started elsewhere (${name}) fences the running one: it exits 3, and the new incarnation is refilled to the writer's head with the scenario met`, async (t) => {
  const r = await deploy(t, `vol-elsewhere-${Object.keys(chain).length}`, chain);
  const head1 = await r.write(40);
  await eventually(() => r.metCut() >= head1, `h2 alone holds through ${head1}`, 20_000);
  const old = r.spawned.get("h2")!;

  // "Elsewhere": the same key and config, another (empty) state directory.
  const cfg = JSON.parse(readFileSync(r.holderFiles.h2!, "utf8"));
  cfg.stateDir = join(r.dir, "h2-elsewhere");
  const file = join(r.dir, "h2-elsewhere.json");
  writeFileSync(file, JSON.stringify(cfg));
  const writing = r.write(20); // writes go on while the two overlap
  const newer = spawnHolder(t, file);
  r.spawned.set("h2-elsewhere", newer);
  t.is((await newer.ready).incarnation, 2, "a new incarnation above the one the control log admitted");

  const { code, stderr } = await old.exit;
  t.is(code, EXIT_FENCED);
  const fenceLine = /^error \[holder_fenced\]: holder h2 incarnation 1 is fenced by incarnation 2 .*handed (\d+) units to it, and exits$/m.exec(stderr);
  t.truthy(fenceLine, stderr);
  t.true(Number(fenceLine?.[1]) > 0, "it handed what it held to the new incarnation (all confirmed: the line names nothing unconfirmed)");
  t.is(r.controller.controlState().holders.h2?.incarnation, 2);

  const head2 = await writing;
  const head3 = await r.write(10);
  t.true(head3 > head2 && head2 > head1);
  await eventually(() => r.metCut() >= head3, `the cut resting on h2 alone is met at the writer's head ${head3}`, 30_000);
  const h2 = r.controller.holdings({ holderId: "h2" });
  t.true(h2.every((h) => h.incarnation === 2), "only the new incarnation counts");
  t.true(h2.reduce((a, h) => a.union(h.retained), RangeSet.EMPTY).covers(1, head3), "h2#2 holds every sequence: no hole");
  t.is(newer.child.exitCode, null, "the new incarnation keeps serving");
});

test.serial("a lock left by a SIGKILLed holder does not block its restart", async (t) => {
  const r = await deploy(t, "vol-stale");
  const head1 = await r.write(10);
  await eventually(() => r.metCut() >= head1, `h2 alone holds through ${head1}`, 20_000);
  await killed(r.spawned.get("h2")!.child);
  t.like(currentLock(join(r.dir, "h2"))?.holder, { role: "holder", id: "h2", incarnation: 1 }, "the kill left the lock behind");

  const again = await r.start("h2");
  t.is((await again.ready).incarnation, 2);
  t.like(currentLock(join(r.dir, "h2"))?.holder, { pid: again.child.pid, incarnation: 2 });
  const head2 = await r.write(10);
  await eventually(() => r.metCut() >= head2, `h2#2 holds through ${head2}`, 30_000);
});
