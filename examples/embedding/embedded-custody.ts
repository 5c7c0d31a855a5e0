#!/usr/bin/env -S npx tsx
/**
 * Embedding a volume writer and its holders in your own program.
 *
 * One process starts three holders and a writer over a SmartWAL volume. They talk through the NATS
 * servers you name: one URL for all, or one per region (`--nats us-east=URL,us-west=URL` for two
 * servers joined by a gateway, each role connecting in its own region). Two holders are in the
 * writer's region, in different AZs; the third is in another region. The writer sends lane `l0`
 * to all three. `sync("az-loss")` resolves once two holders outside the writer's AZ have
 * receipted every write made before the call.
 *
 *   npx tsx examples/embedding/embedded-custody.ts --nats nats://127.0.0.1:4222 --writes 200
 *
 * The NATS server needs no JetStream: units, credits and receipts are core NATS subjects. A real
 * deployment runs each holder in its own process on its own host (`custody run`, docs/deploy.md);
 * embedding all of them in one process is for programs and tests that want the protocol without
 * that deployment.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KeyObject } from "node:crypto";
import { Command } from "commander";
import {
  startHolder,
  startVolumeWriter,
  type Holder,
  type HolderConfigInput,
  type VolumeWriter,
} from "../../actors/index.ts";
import type { PeerDirectory } from "../../actors/index.ts";
import { systemClock } from "../../core/index.ts";
import { generateHolderKeyPair, KeyAuthority, publicKeyFromRaw } from "../../custody/index.ts";
import type { Site } from "../../policies/index.ts";
import { NatsTransport } from "../../transport/index.ts";
import { BLOCK_SIZE, SmartWalVolume } from "../../volume/index.ts";

const VOLUME = "vol-embedded";
const WRITER = "w-embedded";
const BLOCKS = 256;

/** Where each holder runs. The writer is at `use1-az1`. */
export const HOLDER_SITES: Readonly<Record<string, Site>> = {
  "h-az1": { id: "s-az1", region: "us-east", az: "use1-az1", host: "host-a", deps: [] },
  "h-az2": { id: "s-az2", region: "us-east", az: "use1-az2", host: "host-b", deps: [] },
  "h-west": { id: "s-west", region: "us-west", az: "usw2-az1", host: "host-c", deps: [] },
};

/**
 * The holders' public keys, as the writer and the other holders look them up to check receipts.
 * A deployment reads them from the control log (ControlLogPeers); here they are known at start.
 */
class StartupKeys implements PeerDirectory {
  private readonly pairs = new Map<string, { privateKey: KeyObject; publicKey: KeyObject }>();

  constructor(holderIds: readonly string[]) {
    for (const id of holderIds) {
      const kp = generateHolderKeyPair();
      this.pairs.set(id, { privateKey: kp.privateKey, publicKey: publicKeyFromRaw(kp.publicKey) });
    }
  }
  privateKey(holderId: string): KeyObject {
    return this.pairs.get(holderId)!.privateKey;
  }
  key(holderId: string, incarnation: number): KeyObject | undefined {
    return incarnation === 1 ? this.pairs.get(holderId)?.publicKey : undefined;
  }
  incarnation(holderId: string): number | undefined {
    return this.pairs.has(holderId) ? 1 : undefined;
  }
}

/** A running embedded custody network: the writer, its holders, and how to stop them. */
export interface EmbeddedCustody {
  readonly writer: VolumeWriter;
  readonly holders: Readonly<Record<string, Holder>>;
  /** Stops one holder, as if its host went away (custody it held is not released). */
  stopHolder(holderId: string): Promise<void>;
  stop(): Promise<void>;
}

function holderConfig(holderId: string): HolderConfigInput {
  const s = HOLDER_SITES[holderId]!;
  return {
    holderId,
    incarnation: 1,
    site: { region: s.region, az: s.az, host: s.host },
    residency: ["ram"],
    lanes: [{ volume: VOLUME, lane: "l0", upstream: [WRITER], downstream: [] }],
    arena: {
      segmentBytes: 256 * 1024,
      limitBytes: 16 * 1024 * 1024,
      maxOutstandingCredit: 1024 * 1024,
      maxUnitBytes: 128 * 1024,
    },
    receipts: { maxUnits: 16, maxDelayMs: 5 },
    epoch: 1,
    policyGeneration: 1,
  };
}

/** Where each region's roles connect: one URL for every region, or a URL per region. */
export type RegionUrls = string | Readonly<Record<string, string>>;

function urlOf(urls: RegionUrls, region: string): string {
  if (typeof urls === "string") return urls;
  const url = urls[region];
  if (url === undefined) throw new RangeError(`no NATS URL for region ${region}`);
  return url;
}

/** Starts three holders and a writer over a fresh volume under `dir`, each connecting in its region. */
export async function startEmbeddedCustody(urls: RegionUrls, dir: string): Promise<EmbeddedCustody> {
  const ids = Object.keys(HOLDER_SITES);
  const keys = new StartupKeys(ids);
  const connections: NatsTransport[] = [];
  const regionOf = (name: string) => HOLDER_SITES[name]?.region ?? HOLDER_SITES["h-az1"]!.region;
  const connect = async (name: string) => {
    const t = await NatsTransport.connect({ servers: urlOf(urls, regionOf(name)), name });
    connections.push(t);
    return t;
  };
  const holders: Record<string, Holder> = {};
  for (const id of ids) {
    const ports = { transport: await connect(id), clock: systemClock, privateKey: keys.privateKey(id), peers: keys };
    holders[id] = await startHolder(holderConfig(id), ports);
  }
  await SmartWalVolume.create(join(dir, "volume"), { blockCount: BLOCKS, walCapacity: 4096 });
  const volume = await SmartWalVolume.open(join(dir, "volume"));
  // Only the writer (and recovery) may hold the data key: holders keep sealed units they cannot read.
  const authority = new KeyAuthority("ka-embedded", "s-az1");
  authority.authorize(VOLUME, WRITER);
  const writer = startVolumeWriter(
    {
      writerId: WRITER,
      volume: VOLUME,
      term: 1,
      lanes: [{ lane: "l0", fromLba: 0, toLba: BLOCKS - 1, holders: ids }],
      contracts: [{ name: "az-loss", losses: [`az:${HOLDER_SITES["h-az1"]!.az}`], copies: 2 }],
      holderSites: HOLDER_SITES,
      topologyEpoch: 1,
      policyGeneration: 1,
    },
    {
      transport: await connect(WRITER),
      clock: systemClock,
      volume,
      dataKey: authority.dataKey(VOLUME, WRITER),
      peers: keys,
    },
  );
  const stopped = new Set<string>();
  const stopHolder = async (id: string) => {
    if (stopped.has(id)) return;
    stopped.add(id);
    await holders[id]!.stop();
  };
  return {
    writer,
    holders,
    stopHolder,
    async stop() {
      writer.stop();
      for (const id of ids) await stopHolder(id);
      await volume.close();
      for (const t of connections) await t.close();
    },
  };
}

/** A block whose bytes name the write, so a reader can tell which write it holds. */
export function blockOf(n: number): Uint8Array {
  const b = new Uint8Array(BLOCK_SIZE);
  new DataView(b.buffer).setUint32(0, n);
  b.fill(n & 0xff, 4);
  return b;
}

/** `URL` or `region=URL,region=URL`. */
export function parseRegionUrls(text: string): RegionUrls {
  if (!text.includes("=")) return text;
  return Object.fromEntries(text.split(",").map((pair) => pair.split("=", 2) as [string, string]));
}

async function main(urls: RegionUrls, writes: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "embedded-custody-"));
  const custody = await startEmbeddedCustody(urls, dir);
  try {
    for (let i = 0; i < writes; i++) await custody.writer.write(i % BLOCKS, blockOf(i));
    const synced = await custody.writer.sync("az-loss", 30_000);
    const rows = Object.entries(custody.holders).map(([id, h]) => ({
      holder: id,
      az: HOLDER_SITES[id]!.az,
      retained: h.lane(VOLUME, "l0")?.retained.toString() ?? "",
    }));
    process.stdout.write(`${writes} writes; az-loss protects through sequence ${synced.heads["l0"]}\n`);
    for (const r of rows) process.stdout.write(`  ${r.holder.padEnd(7)} ${r.az.padEnd(9)} retains ${r.retained}\n`);
  } finally {
    await custody.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const program = new Command("embedded-custody")
    .requiredOption("--nats <urls>", "NATS URL (nats://127.0.0.1:4222), or region=URL,region=URL")
    .option("--writes <n>", "how many 4 KiB writes", "200")
    .action(async (o: { nats: string; writes: string }) => main(parseRegionUrls(o.nats), Number(o.writes)));
  await program.parseAsync(process.argv);
}
