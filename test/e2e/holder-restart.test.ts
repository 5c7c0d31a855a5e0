/**
 * Restarts heal, on real processes (`custody run holder`) and a real nats-server with JetStream:
 * a holder is SIGKILLed and started again with the same command; it claims a new incarnation from
 * its state directory, the controller admits it (key continuity), its upstream re-sends and the
 * controller copies what scenarios still lack — no test code re-sends, repairs or admits anything.
 *
 * Chain: writer → h1 (RAM) → h2 (RAM, mid-chain) → h3 (disk). The writer and the controller run
 * in this process; the holders are child processes.
 */
import anyTest, { type TestFn } from "ava";
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startController, type Controller } from "../../actors/controller/controller.ts";
import type { ControllerConfig } from "../../actors/controller/controller-config.ts";
import { fetchUnits } from "../../actors/repair/custody-reader.ts";
import { recoverVolume } from "../../actors/repair/volume-recovery.ts";
import { startVolumeWriter, type VolumeWriter } from "../../actors/writer/volume-writer.ts";
import { UnitOutbox } from "../../actors/writer/unit-outbox.ts";
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
import { withNatsServer, type NatsTestContext } from "../kit/index.ts";
import { blockData, contentAt, e2eHolderConfig, eventually, readVolume, site, tempDir } from "./e2e-fixture.ts";
import { custodyCommand } from "../kit/custody-command.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const LANE = "l0";
const BLOCKS = 64;
const SITES: Record<string, Site> = {
  "s-w": site("s-w", "r1", "az1"),
  "s-1": site("s-1", "r1", "az1"),
  "s-2": site("s-2", "r1", "az2"),
  "s-3": site("s-3", "r1", "az3"),
  /** Holds the genesis base only (no holder process): no scenario reaches it. */
  "s-v": site("s-v", "r1", "az9"),
};
const CHAIN: Record<string, { site: string; upstream: string[]; downstream: string[]; disk?: boolean }> = {
  h1: { site: "s-1", upstream: ["w1"], downstream: ["h2"] },
  h2: { site: "s-2", upstream: ["h1"], downstream: ["h3"] },
  h3: { site: "s-3", upstream: ["h2"], downstream: [], disk: true },
};
/** Only h2 is left when az1 and az3 burn: its copy is the whole cut. */
const ONLY_H2 = "az1 and az3 destroyed";
/** Only h3's disk is left. */
const ONLY_H3 = "az1 and az2 destroyed";

interface Rig {
  volume: string;
  holderFiles: Record<string, string>;
  children: Map<string, ChildProcess>;
  controller: Controller;
  writer: VolumeWriter;
  written: { lsn: number; lba: number; data: Uint8Array }[];
  start(id: string, over?: Record<string, unknown>): Promise<{ child: ChildProcess; ready: { incarnation: number } }>;
  write(n: number): Promise<number>;
  cut(scenario: string): number;
}

function spawnRole(t: { context: NatsTestContext }, config: string): { child: ChildProcess; ready: Promise<Record<string, unknown>>; exit: Promise<{ code: number | null; stderr: string }> } {
  const c = custodyCommand(["run", "holder", "--config", config]);
  const child = spawn(c.command, c.args, { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
  t.context.defer(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr!.on("data", (b) => (stderr += String(b)));
  const exit = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on("exit", (code) => resolve({ code, stderr })));
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (b) => {
      out += String(b);
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as Record<string, unknown>);
    });
    void exit.then(({ code, stderr: e }) => reject(new Error(`holder exited (${code}) before it was ready: ${e}`)));
  });
  return { child, ready, exit };
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.on("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

async function deploy(t: { context: NatsTestContext; teardown(fn: () => unknown): void }, volume: string): Promise<Rig> {
  const url = t.context.nats.url;
  const region = `r-${volume}`;
  const dir = tempDir("custody-restart-");
  const keys: Record<string, Uint8Array> = {};
  const holderFiles: Record<string, string> = {};
  for (const [id, h] of Object.entries(CHAIN)) {
    const kp = generateHolderKeyPair();
    keys[id] = kp.publicKey;
    const keyFile = join(dir, `${id}.key`);
    writeFileSync(keyFile, kp.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
    const holder = { ...e2eHolderConfig(id, SITES[h.site]!, volume, [{ lane: LANE, upstream: h.upstream, downstream: h.downstream }], { resendAfterMs: 300 }), incarnation: undefined };
    if (h.disk) Object.assign(holder, { residency: ["ram", "disk"], flush: { intervalMs: 50, deadlineMs: 2_000 } });
    const cfg = { role: "holder", nats: { servers: url }, controlRegion: region, stateDir: join(dir, id), keyFile, holder };
    holderFiles[id] = join(dir, `${id}.json`);
    writeFileSync(holderFiles[id]!, JSON.stringify(cfg));
  }
  const children = new Map<string, ChildProcess>();
  // Holder ids repeat across the tests of this file (one server): each test's holders go with it.
  t.teardown(() => Promise.all([...children.values()].map(killed)));
  const start = async (id: string, over: Record<string, unknown> = {}) => {
    let file = holderFiles[id]!;
    if (Object.keys(over).length > 0) {
      const cfg = JSON.parse(await import("node:fs").then((fs) => fs.readFileSync(file, "utf8")));
      cfg.holder = { ...cfg.holder, ...over };
      file = `${file}.over.json`;
      writeFileSync(file, JSON.stringify(cfg));
    }
    const p = spawnRole(t, file);
    const ready = (await p.ready) as { incarnation: number };
    children.set(id, p.child);
    return { child: p.child, ready };
  };
  // The operator bootstraps the control stream (holders only open it), holders start (each claims
  // incarnation 1), then the operator's first events admit them.
  const ct = await NatsTransport.connect({ servers: url, name: `ctl-${volume}` });
  t.context.defer(() => ct.close());
  const { log: store } = await initJetStreamControlLog(ct.connection, { region });
  await Promise.all(Object.keys(CHAIN).map((id) => start(id)));
  const holderSites: Record<string, string> = { vault: "s-v", ...Object.fromEntries(Object.entries(CHAIN).map(([id, h]) => [id, h.site])) };
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
      holderSites,
      bases: [{ id: "genesis", holder: "vault", cut: { [LANE]: 0 }, bytes: 0 }],
      keyAuthorities: [{ id: "ka", site: "s-v" }],
      links: [],
      recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
      scenarios: [
        { name: ONLY_H2, losses: [{ domain: "az:az1", kind: LossKind.siteDestruction }, { domain: "az:az3", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: true },
        { name: ONLY_H3, losses: [{ domain: "az:az1", kind: LossKind.siteDestruction }, { domain: "az:az2", kind: LossKind.siteDestruction }], deadlineSec: 3600, required: true },
      ],
      timelines: [],
      staleAfterMs: 3_000,
      releasable: [],
    },
  };
  const controller = await startController(config, { transport: ct, clock: systemClock, store });
  t.context.defer(() => controller.stop());
  await controller.bootstrap(
    Object.entries(CHAIN).map(([id, h]) => ({ holderId: id, incarnation: 1, publicKey: keys[id]!, failureDomain: `r1/${SITES[h.site]!.az}/${SITES[h.site]!.host}` })),
    Object.keys(CHAIN),
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
      lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: ["h1"] }],
      contracts: [],
      holderSites: Object.fromEntries(Object.entries(CHAIN).map(([id, h]) => [id, SITES[h.site]!])),
      topologyEpoch: 1,
      policyGeneration: 1,
      resendAfterMs: 300,
    },
    { transport: wt, clock: systemClock, volume: vol, dataKey: new Uint8Array(32).fill(9), peers, outbox },
  );
  t.context.defer(() => writer.stop());
  const written: Rig["written"] = [];
  let seed = 0;
  return {
    volume,
    holderFiles,
    children,
    controller,
    writer,
    written,
    start,
    async write(n) {
      let head = 0;
      for (let i = 0; i < n; i++) {
        const lba = (seed * 7) % BLOCKS;
        const data = blockData(1000 + seed++);
        const ack = await writer.write(lba, data);
        written.push({ lsn: ack.lsn, lba, data });
        head = ack.pieces[0]!.seq;
      }
      await writer.sync();
      return head;
    },
    cut(scenario) {
      const r = controller.report()?.reports.find((x) => x.name === scenario);
      return r !== undefined && r.evidence === "observed" ? (r.cut?.[LANE] ?? -1) : -1;
    },
  };
}

test.serial("a SIGKILLed mid-chain RAM holder comes back as a new, admitted incarnation, and the cut resting on it alone reaches the writer's head again", async (t) => {
  const r = await deploy(t, "vol-mid");
  const head1 = await r.write(40);
  await eventually(() => r.cut(ONLY_H2) >= head1, `h2 alone holds through ${head1}`, 20_000);

  await killed(r.children.get("h2")!);
  const head2 = await r.write(30); // written while h2 is down: h1 keeps them, h3 gets nothing
  const again = await r.start("h2");
  t.is(again.ready.incarnation, 2, "the restart claimed a new incarnation from its state directory");
  await eventually(() => r.controller.controlState().holders.h2?.incarnation === 2, "the controller admitted h2#2 (key continuity)", 20_000);
  await eventually(() => r.cut(ONLY_H2) >= head2, `the cut resting on h2 alone is back at the writer's head ${head2}`, 30_000);
  const h2 = r.controller.holdings({ holderId: "h2" });
  t.true(h2.every((h) => h.incarnation === 2), "only the admitted incarnation counts");
  t.true(h2.reduce((a, h) => a.union(h.retained), RangeSet.EMPTY).covers(1, head2));
  t.true(r.controller.counters.get("admission_committed") >= 1);
  t.log(`coverage copies: ${r.controller.counters.get("coverage_copy_started")}, units copied ${r.controller.counters.get("coverage_copied_units")}`);
});

test.serial("a SIGKILLed disk holder re-receipts its spilled ranges under its new incarnation, and a recovery reads them from it byte-exact", async (t) => {
  const r = await deploy(t, "vol-disk");
  const head = await r.write(50);
  const onDisk = () =>
    r.controller.holdings({ holderId: "h3" })
      .filter((h) => h.residency === "disk")
      .reduce((a, h) => a.union(h.retained), RangeSet.EMPTY);
  await eventually(() => onDisk().covers(1, head), "h3 persisted everything", 20_000);

  await killed(r.children.get("h3")!);
  const again = await r.start("h3");
  t.is(again.ready.incarnation, 2);
  await eventually(() => r.controller.controlState().holders.h3?.incarnation === 2, "h3#2 admitted", 20_000);
  await eventually(
    () => r.controller.holdings({ holderId: "h3" }).some((h) => h.incarnation === 2 && h.residency === "disk" && h.retained.covers(1, head)),
    "h3#2 receipts the recovered spill records at disk residency",
    20_000,
  );
  await eventually(() => r.cut(ONLY_H3) >= head, "the disk-only scenario keeps the head", 20_000);

  // Recovery reads from h3#2 over NATS (fetch is served from its spill stream).
  const reader = await NatsTransport.connect({ servers: t.context.nats.url, name: "recovery" });
  t.context.defer(() => reader.close());
  const units = await fetchUnits(reader, "h3", r.volume, LANE, RangeSet.of(1, head));
  t.true(units.length > 0);
  const dir = join(tempDir("custody-restart-recover-"), "vol");
  const result = await recoverVolume({ volume: r.volume, dir, blockCount: BLOCKS, lanes: [LANE], dataKey: new Uint8Array(32).fill(9), units });
  t.is(result.cut[LANE], head);
  const expected = contentAt(r.written, BLOCKS, result.lsn);
  t.true(Buffer.from(await readVolume(dir, BLOCKS)).equals(Buffer.from(expected)), "the recovered volume is byte-exact");
});

test.serial("a restart that would reuse an incarnation is refused with incarnation_reused, and changes nothing", async (t) => {
  const r = await deploy(t, "vol-reuse");
  await r.write(5);
  await killed(r.children.get("h1")!);
  const p = spawnRole(t, await (async () => {
    const { readFileSync } = await import("node:fs");
    const cfg = JSON.parse(readFileSync(r.holderFiles.h1!, "utf8"));
    cfg.holder.incarnation = 1; // hand-edited: the state directory already claimed 1
    const file = `${r.holderFiles.h1}.reuse.json`;
    writeFileSync(file, JSON.stringify(cfg));
    return file;
  })());
  p.ready.catch(() => undefined);
  const { code, stderr } = await p.exit;
  t.is(code, 1);
  t.regex(stderr, /incarnation_reused/);
  // A plain restart afterwards still gets a fresh incarnation: the refused start claimed nothing.
  const again = await r.start("h1");
  t.is(again.ready.incarnation, 2);
});

test.serial("a restart with a new key is left to the operator: refused automatically, admitted by `custody holder admit`, and only then counted", async (t) => {
  const r = await deploy(t, "vol-rekey");
  const head = await r.write(10);
  await killed(r.children.get("h2")!);
  // The host's key was replaced: key continuity cannot vouch for it.
  const { readFileSync } = await import("node:fs");
  const cfg = JSON.parse(readFileSync(r.holderFiles.h2!, "utf8"));
  const kp = generateHolderKeyPair();
  writeFileSync(cfg.keyFile, kp.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const again = await r.start("h2");
  t.is(again.ready.incarnation, 2);
  await eventually(() => r.controller.counters.get("admission_key_changed") >= 1, "the controller refused the automatic admission", 20_000);
  t.is(r.controller.controlState().holders.h2?.incarnation, 1);
  t.false(r.controller.holdings({ holderId: "h2" }).some((h) => h.incarnation === 2), "receipts of the unadmitted incarnation count for nothing");

  const admitCommand = custodyCommand(["holder", "admit", "--server", t.context.nats.url, "--region", "r-vol-rekey", "--holder", "h2", "--incarnation", "2", "--public-key", Buffer.from(kp.publicKey).toString("hex"), "--failure-domain", `r1/az2/${SITES["s-2"]!.host}`, "--json"]);
  const admit = spawn(admitCommand.command, admitCommand.args, { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  admit.stdout!.on("data", (b) => (out += String(b)));
  const code = await new Promise<number | null>((resolve) => admit.on("exit", resolve));
  t.is(code, 0);
  t.like(JSON.parse(out.trim().split("\n").at(-1)!), { admitted: "h2", incarnation: 2 });
  await eventually(() => r.controller.holdings({ holderId: "h2" }).some((h) => h.incarnation === 2 && h.retained.covers(1, head)), "h2#2's receipts count once admitted", 20_000);
});
