/**
 * Shared arrangements for end-to-end tests: holders at named sites on real NATS, a volume writer
 * over a real SmartWAL volume with its data key from a key authority, and a byte model of the
 * writer's content per LSN (the reference recovery is checked against).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../core/clock.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { startVolumeWriter, type VolumeWriter } from "../../actors/writer/volume-writer.ts";
import type { LaneSpec, ProtectionContract } from "../../actors/writer/writer-config.ts";
import type { CoalescedStreamSpec } from "../../actors/writer/coalesced-stream.ts";
import type { TransportUnit } from "../../lanes/transport-unit.ts";
import type { Site } from "../../policies/topology.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { KeyRing, launchHolder } from "../holder/holder-fixture.ts";
import type { HolderConfigInput } from "../../actors/holder/holder-config.ts";

export { blockData } from "../kit/block-data.ts";

export { KeyRing, eventually, settle } from "../holder/holder-fixture.ts";

/** A fresh temp directory. */
export function tempDir(prefix = "custody-e2e-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A site record for the policy engine and the writer's contract checks. */
export function site(id: string, region: string, az: string): Site {
  return { id, region, az, host: `${id}-host`, deps: [] };
}

/** Holder config for one volume's lanes at `s`, fenced at epoch/generation 1 (the control log's initial fence). */
export function e2eHolderConfig(holderId: string, s: Site, volume: string, lanes: { lane: string; upstream: string[]; downstream?: string[]; representation?: "raw" | "coalesced" }[], over: Partial<HolderConfigInput> = {}): HolderConfigInput {
  return {
    holderId,
    incarnation: 1,
    site: { region: s.region, az: s.az, host: s.host },
    residency: ["ram"],
    lanes: lanes.map((l) => ({ volume, lane: l.lane, upstream: l.upstream, downstream: l.downstream ?? [], ...(l.representation === undefined ? {} : { representation: l.representation }) })),
    arena: { segmentBytes: 256 * 1024, limitBytes: 8 * 1024 * 1024, maxOutstandingCredit: 1024 * 1024, maxUnitBytes: 128 * 1024 },
    receipts: { maxUnits: 16, maxDelayMs: 5 },
    epoch: 1,
    policyGeneration: 1,
    ...over,
  };
}

export type LaunchedHolder = Awaited<ReturnType<typeof launchHolder>>;
export { launchHolder };

/** A running writer with its volume, transport and a model of its content. */
export interface WriterRig {
  writer: VolumeWriter;
  volume: SmartWalVolume;
  transport: NatsTransport;
  units: TransportUnit[];
  /** Every acknowledged write in LSN order. */
  writes: { lsn: number; lba: number; data: Uint8Array }[];
  write(lba: number, data: Uint8Array): Promise<number>;
  close(): Promise<void>;
}

/** Creates a volume and starts a writer on it. */
export async function launchWriter(opts: {
  url: string;
  writerId: string;
  volume: string;
  term?: number;
  blockCount: number;
  lanes: LaneSpec[];
  contracts: ProtectionContract[];
  sites: Record<string, Site>;
  keys: KeyRing;
  authority: KeyAuthority;
  custody?: boolean;
  coalesced?: CoalescedStreamSpec;
}): Promise<WriterRig> {
  const dir = join(tempDir(), "vol");
  await SmartWalVolume.create(dir, { blockCount: opts.blockCount, walCapacity: 4096 });
  const volume = await SmartWalVolume.open(dir);
  const transport = await NatsTransport.connect({ servers: opts.url, name: opts.writerId });
  opts.authority.authorize(opts.volume, opts.writerId);
  const units: TransportUnit[] = [];
  const writer = startVolumeWriter(
    {
      writerId: opts.writerId,
      volume: opts.volume,
      term: opts.term ?? 1,
      lanes: opts.lanes,
      contracts: opts.contracts,
      holderSites: opts.sites,
      topologyEpoch: 1,
      policyGeneration: 1,
      custody: opts.custody,
      ...(opts.coalesced === undefined ? {} : { coalesced: opts.coalesced }),
    },
    { transport, clock: systemClock, volume, dataKey: opts.authority.dataKey(opts.volume, opts.writerId), peers: opts.keys, onUnit: (u) => units.push(u) },
  );
  const writes: { lsn: number; lba: number; data: Uint8Array }[] = [];
  return {
    writer,
    volume,
    transport,
    units,
    writes,
    async write(lba, data) {
      const ack = await writer.write(lba, data);
      writes.push({ lsn: ack.lsn, lba, data: new Uint8Array(data) });
      return ack.lsn;
    },
    async close() {
      writer.stop();
      await volume.close().catch(() => undefined);
      await transport.close();
    },
  };
}

/** The writer's volume content (blockCount blocks) after every write with LSN ≤ `lsn`. */
export function contentAt(writes: readonly { lsn: number; lba: number; data: Uint8Array }[], blockCount: number, lsn: number): Uint8Array {
  const out = new Uint8Array(blockCount * BLOCK_SIZE);
  for (const w of [...writes].sort((a, b) => a.lsn - b.lsn)) if (w.lsn <= lsn) out.set(w.data, w.lba * BLOCK_SIZE);
  return out;
}


/** Reads the whole volume at `dir`. */
export async function readVolume(dir: string, blockCount: number): Promise<Uint8Array> {
  const v = await SmartWalVolume.open(dir);
  try {
    return await v.read(0, blockCount);
  } finally {
    await v.close();
  }
}

export { systemClock };
