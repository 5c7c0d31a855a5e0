/**
 * bench:e2e — the volume writer end to end: write IOPS and latency with custody ON (3 holders in
 * 2 regions of a real NATS supercluster: same-AZ and other-AZ RAM holders in us-east, one in
 * us-west; each holder its own process, as in production) next to the SAME writer actor with custody OFF (SmartWAL only: no units, no receipts), in one
 * run, at queue depth 16 with 4 KiB writes.
 *
 * - local latency: write call → SmartWAL admission (what the application's write waits for);
 * - protected latency: write call → the first verified receipt proving the contract
 *   "survive loss of us-east" (a us-west holder retains it) — what a protected sync waits for.
 *
 *   npm run bench:e2e                 # table
 *   npm run bench:e2e -- --json       # table, then one JSON object on the last line
 *   npm run bench:e2e -- --writes 4000 # writes per mode (default 3000)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startVolumeWriter } from "../actors/index.ts";
import { systemClock } from "../core/index.ts";
import { KeyAuthority } from "../custody/index.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../custody/index.ts";
import type { Site } from "../policies/index.ts";
import { NatsTransport } from "../transport/index.ts";
import { SmartWalVolume } from "../volume/index.ts";
import { startSupercluster } from "../testing/index.ts";
import type { ActorSpec } from "../testing/index.ts";
import type { KeyObject } from "node:crypto";

const args = process.argv.slice(2);
const json = args.includes("--json");
const wi = args.indexOf("--writes");
const WRITES = wi >= 0 ? Number(args[wi + 1]) : 3000;
if (!Number.isSafeInteger(WRITES) || WRITES < 100) {
  console.error("--writes needs an integer >= 100");
  process.exit(1);
}
const QD = 16;
const BLOCKS = 4096;
const VOLUME = "vbench";

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

const work = mkdtempSync(join(tmpdir(), "custody-bench-e2e-"));
async function newVolume(name: string): Promise<SmartWalVolume> {
  const dir = join(work, name);
  await SmartWalVolume.create(dir, { blockCount: BLOCKS, walCapacity: 65_536 });
  return SmartWalVolume.open(dir, { maxBatch: 64 });
}

/** Runs WRITES 4 KiB writes at QD; `write` resolves on admission and returns a key for protection. */
async function drive(write: (lba: number, data: Uint8Array) => Promise<number>): Promise<{ seconds: number; local: number[]; keys: { key: number; t0: number }[] }> {
  const data = new Uint8Array(4096).fill(0x5a);
  const local: number[] = [];
  const keys: { key: number; t0: number }[] = [];
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < WRITES) {
      const i = next++;
      const t0 = performance.now();
      const key = await write((i * 2654435761) % BLOCKS, data);
      local.push(performance.now() - t0);
      keys.push({ key, t0 });
    }
  };
  await Promise.all(Array.from({ length: QD }, worker));
  return { seconds: (performance.now() - start) / 1000, local, keys };
}

// ---- custody OFF: the same writer actor with custody disabled (SmartWAL only, nothing shipped) ----
const offVol = await newVolume("off");
const offT = new (class {
  // A transport that goes nowhere: custody off publishes nothing but progress, which is dropped.
  readonly name = "off";
  publish(): void {}
  subscribe() {
    return { subject: "", unsubscribe() {}, drain: async () => {} };
  }
  request(): Promise<never> {
    return Promise.reject(new Error("custody off"));
  }
  respond(): void {}
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
})();
const offWriter = startVolumeWriter(
  { writerId: "w1", volume: VOLUME, term: 1, lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: [] }], contracts: [], holderSites: {}, topologyEpoch: 1, policyGeneration: 1, custody: false },
  { transport: offT, clock: systemClock, volume: offVol, dataKey: new Uint8Array(32), peers: { key: () => undefined, incarnation: () => undefined } },
);
const off = await drive(async (lba, d) => (await offWriter.write(lba, d)).lsn);
await offWriter.sync();
offWriter.stop();
await offVol.close();

// ---- custody ON: writer + 3 holders in 2 regions ----
const sc = await startSupercluster({ regions: ["us-east", "us-west"], jetstream: false });
const sites: Record<string, Site> = {
  "h-e1": { id: "s-e1", region: "us-east", az: "use1-az1", host: "e1", deps: [] },
  "h-e2": { id: "s-e2", region: "us-east", az: "use1-az2", host: "e2", deps: [] },
  "h-w": { id: "s-w", region: "us-west", az: "usw2-a", host: "w", deps: [] },
};
// Holders run as their own processes (as in production), so their CPU is not the writer's event loop.
const keys = new Map<string, KeyObject>();
const peerHex: Record<string, string> = {};
const privHex: Record<string, string> = {};
for (const id of Object.keys(sites)) {
  const kp = generateHolderKeyPair();
  keys.set(id, publicKeyFromRaw(kp.publicKey));
  peerHex[id] = Buffer.from(kp.publicKey).toString("hex");
  privHex[id] = Buffer.from(kp.privateKey.export({ format: "der", type: "pkcs8" })).toString("hex");
}
const peers = { key: (h: string, inc: number) => (inc === 1 ? keys.get(h) : undefined), incarnation: (h: string) => (keys.has(h) ? 1 : undefined) };
const conns: NatsTransport[] = [];
const children: ChildProcess[] = [];
for (const [id, s] of Object.entries(sites)) {
  const spec: ActorSpec = {
    kind: "holder",
    url: sc.regions[s.region]!.url,
    config: {
      holderId: id,
      incarnation: 1,
      site: { region: s.region, az: s.az, host: s.host },
      residency: ["ram"],
      lanes: [{ volume: VOLUME, lane: "l0", upstream: ["w1"], downstream: [] }],
      arena: { segmentBytes: 256 << 10, limitBytes: Math.max(64 << 20, WRITES * 4400 * 4), maxOutstandingCredit: 2 << 20, maxUnitBytes: 128 << 10 },
      receipts: { maxUnits: 16, maxDelayMs: 2 },
      epoch: 1,
      policyGeneration: 1,
    },
    privateKeyHex: privHex[id]!,
    peers: peerHex,
  };
  const file = join(work, `${id}.json`);
  writeFileSync(file, JSON.stringify(spec));
  const child = spawn(process.execPath, ["--import", "tsx", "testing/actor-process.ts", file], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (c) => reject(new Error(`holder ${id} exited (${c})`)));
  });
}
const wt = await NatsTransport.connect({ servers: sc.regions["us-east"]!.url, name: "w1" });
conns.push(wt);
const onVol = await newVolume("on");
const authority = new KeyAuthority("ka", "s-w");
authority.authorize(VOLUME, "w1");
const contract = "region-loss";
let onReceipt = () => {};
const writer = startVolumeWriter(
  {
    writerId: "w1",
    volume: VOLUME,
    term: 1,
    lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: Object.keys(sites) }],
    contracts: [{ name: contract, losses: ["region:us-east"] }],
    holderSites: sites,
    topologyEpoch: 1,
    policyGeneration: 1,
    maxUnitPayloadBytes: 64 * 1024,
  },
  { transport: wt, clock: systemClock, volume: onVol, dataKey: authority.dataKey(VOLUME, "w1"), peers, onReceipt: () => onReceipt() },
);
// Protected latency: each write's sequence is stamped when the contract first covers it.
const protectedAt = new Map<number, number>();
let through = 0;
onReceipt = () => {
  const now = performance.now();
  const p = writer.core.protectedThrough(contract, "l0");
  for (let s = through + 1; s <= p; s++) protectedAt.set(s, now);
  through = Math.max(through, p);
};
const on = await drive(async (lba, d) => (await writer.write(lba, d)).pieces[0]!.seq);
await writer.sync(contract, 30_000);
const protectedMs = on.keys.map(({ key, t0 }) => (protectedAt.get(key) ?? NaN) - t0).filter((x) => Number.isFinite(x));

writer.stop();
for (const c of children) c.kill("SIGKILL");
for (const c of conns) await c.close();
await onVol.close();
await sc.stop();
rmSync(work, { recursive: true, force: true });

const iopsOff = WRITES / off.seconds;
const iopsOn = WRITES / on.seconds;
const rows = [
  { mode: "custody off (same writer)", iops: iopsOff, p50Local: pct(off.local, 50), p99Local: pct(off.local, 99), p50Prot: NaN, p99Prot: NaN },
  { mode: "custody on (3 holders, 2 regions)", iops: iopsOn, p50Local: pct(on.local, 50), p99Local: pct(on.local, 99), p50Prot: pct(protectedMs, 50), p99Prot: pct(protectedMs, 99) },
];
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "-");
console.log(`bench:e2e  ${WRITES} writes of 4 KiB at qd${QD} per mode; protected = receipt proving "survive loss of us-east"`);
console.log("mode                               write IOPS   p50 local ms  p99 local ms  p50 protected ms  p99 protected ms");
for (const r of rows) console.log(`${r.mode.padEnd(35)}${f(r.iops, 0).padStart(10)}   ${f(r.p50Local).padStart(12)}  ${f(r.p99Local).padStart(12)}  ${f(r.p50Prot).padStart(16)}  ${f(r.p99Prot).padStart(16)}`);
console.log(`ratio IOPS custody on / off: ${(iopsOn / iopsOff).toFixed(3)}   (protected samples: ${protectedMs.length}/${WRITES})`);
if (json) {
  console.log(
    JSON.stringify({
      writes: WRITES,
      qd: QD,
      iops_custody_off: iopsOff,
      iops_custody_on: iopsOn,
      ratio_iops_custody_on_vs_off: iopsOn / iopsOff,
      p50_local_ms: pct(on.local, 50),
      p99_local_ms: pct(on.local, 99),
      p99_local_ms_custody_off: pct(off.local, 99),
      p50_protected_ms: pct(protectedMs, 50),
      p99_protected_ms: pct(protectedMs, 99),
    }),
  );
}
