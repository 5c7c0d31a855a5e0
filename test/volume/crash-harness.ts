import { createHash } from "node:crypto";
import type { ExecutionContext } from "ava";
import fc from "fast-check";
import { CrashFileLayer, type CrashSpec } from "../../core/crash-file-layer.ts";
import { BLOCK_SIZE, DamagedBlockError, SmartWalVolume, VolumeNotFoundError, VolumeLayout, type ExtentBarrier, VolumeMode } from "../../volume/index.ts";

/** Seeded PRNG (mulberry32): the same seed replays the same workload and crash choices. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One version of one LBA: its bytes (null = zeros/trimmed) and the LSN range its record can have. */
interface Version {
  data: Uint8Array | null;
  lsnLow: number;
  lsnHigh: number;
}

/** A recorded workload: per-LBA versions in LSN order and the durable LSN acknowledged at each op index. */
export interface Workload {
  mode: VolumeMode;
  blockCount: number;
  fl: CrashFileLayer;
  /** Op index after create + first mount (crash points before it test creation). */
  mountedAt: number;
  versions: Version[][];
  /** [opIndex, durableLsn]: a syncCache that had completed by opIndex acknowledged durableLsn. */
  acks: [number, number][];
  maxLsn: number;
  /** SmartWAL barrier the workload ran with (recovery's reuse check mounts with it too). */
  extentBarrier: ExtentBarrier;
  /** Where extent and WAL live: two files, or one (one fdatasync covers both). */
  layout: VolumeLayout;
}

export const DIR = "/vol";

function pattern(id: number, blocks: number): Uint8Array {
  const d = new Uint8Array(blocks * BLOCK_SIZE);
  const r = prng(id * 7919 + 1);
  for (let i = 0; i < d.length; i += 4) d[i] = Math.floor(r() * 256);
  d[0] = id & 0xff;
  d[1] = (id >> 8) & 0xff;
  return d;
}

/**
 * Runs a generated workload (writes of 1–3 blocks, trims, concurrent groups, syncs, checkpoints)
 * on a small volume over a CrashFileLayer whose ring wraps and whose CoW spare is reused, and
 * records what every op index must guarantee.
 */
export async function runWorkload(
  seed: number,
  mode: VolumeMode,
  steps: number,
  fl = new CrashFileLayer(),
  onMounted?: () => void,
  extentBarrier: ExtentBarrier = "per-batch",
  layout: VolumeLayout = VolumeLayout.Split,
): Promise<Workload> {
  const rnd = prng(seed);
  const blockCount = 6;
  await SmartWalVolume.create(DIR, { blockCount, mode, walCapacity: 12, spareBlocks: 5, layout }, fl);
  const vol = await SmartWalVolume.open(DIR, { fileLayer: fl, maxBatch: 4, extentBarrier });
  const mountedAt = fl.opCount();
  onMounted?.();
  const versions: Version[][] = Array.from({ length: blockCount }, () => [{ data: null, lsnLow: 0, lsnHigh: 0 }]);
  const acks: [number, number][] = [];
  let nextId = seed * 1000 + 1;
  let maxLsn = 0;
  // Versions are appended when the LSN is known, but must stay in LSN order: collect then sort.
  const pendingVersions: { lba: number; v: Version }[] = [];
  const write = (lba: number, blocks: number) => {
    const data = pattern(nextId++, blocks);
    return vol.write(lba, data).then((lsn) => {
      maxLsn = Math.max(maxLsn, lsn);
      for (let k = 0; k < blocks; k++) {
        // One record per block, consecutive LSNs ending at the resolved one.
        const exact = lsn - blocks + 1 + k;
        pendingVersions.push({ lba: lba + k, v: { data: data.slice(k * BLOCK_SIZE, (k + 1) * BLOCK_SIZE), lsnLow: exact, lsnHigh: exact } });
      }
    });
  };
  const trim = (lba: number, count: number) =>
    vol.trim(lba, count).then((lsn) => {
      maxLsn = Math.max(maxLsn, lsn);
      for (let k = 0; k < count; k++) pendingVersions.push({ lba: lba + k, v: { data: null, lsnLow: lsn, lsnHigh: lsn } });
    });
  const randomMut = () => {
    const blocks = 1 + Math.floor(rnd() * 3);
    const lba = Math.floor(rnd() * (blockCount - blocks + 1));
    return rnd() < 0.12 ? trim(lba, blocks) : write(lba, blocks);
  };
  for (let s = 0; s < steps; s++) {
    const r = rnd();
    if (r < 0.35) await randomMut();
    else if (r < 0.6) await Promise.all(Array.from({ length: 2 + Math.floor(rnd() * 3) }, randomMut));
    else if (r < 0.92) {
      const d = await vol.syncCache();
      acks.push([fl.opCount(), d]);
    } else await vol.checkpoint();
  }
  const d = await vol.syncCache();
  acks.push([fl.opCount(), d]);
  await vol.close();
  pendingVersions.sort((a, b) => a.v.lsnHigh - b.v.lsnHigh);
  for (const { lba, v } of pendingVersions) versions[lba]!.push(v);
  return { mode, blockCount, fl, mountedAt, versions, acks, maxLsn, extentBarrier, layout };
}

/** Durable LSN acknowledged to the client by op index `at`. */
export function ackedAt(w: Workload, at: number): number {
  let d = 0;
  for (const [op, lsn] of w.acks) if (op <= at) d = Math.max(d, lsn);
  return d;
}

/** Result of checking one crash state. */
export interface StateCheck {
  lostAcked: number;
  silentCorruptions: number;
  damaged: number;
  lsnProblems: number;
  /** Records recovery cut because a deferred-barrier write's data never reached the disk. */
  unsyncedCut: number;
  mounted: boolean;
  problems: string[];
}

/**
 * Mounts the crashed layer and checks: recovered last LSN ≥ acknowledged durable LSN and ≤ the
 * largest LSN ever assigned (no gap, no invention); every LBA reads back a version consistent
 * with the recovered LSN (so every synced write is byte-exact, and a torn unsynced overwrite gives
 * old or new). With `allowDamage`, a read may instead fail with DamagedBlockError, but only for an
 * LBA the recovery report lists.
 */
export async function checkState(w: Workload, layer: CrashFileLayer, acked: number, allowDamage: boolean, reuse = false, crashAgain = false): Promise<StateCheck> {
  // Where damage is possible, scrub so checkpoint-named blocks are verified (and reported) too.
  const res: StateCheck = { lostAcked: 0, silentCorruptions: 0, damaged: 0, lsnProblems: 0, unsyncedCut: 0, mounted: true, problems: [] };
  const vol = await SmartWalVolume.open(DIR, { fileLayer: layer, scrub: allowDamage, extentBarrier: w.extentBarrier });
  try {
    const L = vol.recovery.lastLsn;
    res.unsyncedCut = vol.recovery.unsyncedCutRecords;
    if (L < acked) {
      res.lostAcked++;
      res.problems.push(`recovered LSN ${L} < acknowledged ${acked}`);
    }
    if (L > w.maxLsn) {
      res.lsnProblems++;
      res.problems.push(`recovered LSN ${L} > max assigned ${w.maxLsn}`);
    }
    const reported = new Set(vol.recovery.damaged.map((d) => d.lba));
    res.damaged = reported.size;
    for (let lba = 0; lba < w.blockCount; lba++) {
      let got: Uint8Array;
      try {
        got = await vol.read(lba);
      } catch (err) {
        if (err instanceof DamagedBlockError && allowDamage && reported.has(lba)) continue;
        res.silentCorruptions++;
        res.problems.push(`LBA ${lba}: unexpected ${String(err)}`);
        continue;
      }
      const vs = w.versions[lba]!;
      const ok = vs.some((v, i) => v.lsnLow <= L && vs.slice(i + 1).every((later) => later.lsnHigh > L) && same(v.data, got));
      if (!ok) {
        // Distinguish a lost acknowledged write from any other wrong content.
        const ackedOk = vs.some((v, i) => v.lsnHigh <= acked && vs.slice(i + 1).every((later) => later.lsnHigh > acked) && same(v.data, got));
        if (ackedOk) res.lostAcked++;
        else res.silentCorruptions++;
        res.problems.push(`LBA ${lba}: content matches no version allowed at LSN ${L}`);
      }
    }
    if (crashAgain && !allowDamage && res.problems.length === 0) {
      await vol.close();
      await crashAfterRecovery(w, layer, L, res);
      return res;
    }
    if (reuse && res.problems.length === 0) {
      // Recovery must leave a usable volume whose next LSN continues without a gap.
      const lsn = await vol.write(0, pattern(999_999, 1));
      await vol.syncCache();
      if (lsn !== L + 1) {
        res.lsnProblems++;
        res.problems.push(`next write got LSN ${lsn}, expected ${L + 1}`);
      }
    }
  } finally {
    await vol.close();
  }
  return res;
}

/**
 * A second power cut right after recovery: the recovered volume (whose mount freed the blocks that
 * replayed records superseded) takes new writes that reuse those blocks; the cut keeps every data
 * pwrite and drops every WAL write. Everything recovered before (LSN ≤ L) was made durable by
 * the recovery, so the next mount must hold it unchanged: never cut it, never call it damage.
 */
async function crashAfterRecovery(w: Workload, layer: CrashFileLayer, L: number, res: StateCheck): Promise<void> {
  const vol = await SmartWalVolume.open(DIR, { fileLayer: layer, extentBarrier: w.extentBarrier });
  const extentEnd = (w.blockCount + 5) * BLOCK_SIZE; // runWorkload's spare is 5 blocks
  const fresh = new Map<number, { lsn: number; data: Uint8Array }>();
  try {
    await Promise.all(
      [0, 1, 2].map(async (lba) => {
        const data = pattern(900_000 + lba, 1);
        fresh.set(lba, { lsn: await vol.write(lba, data), data });
      }),
    );
  } finally {
    await vol.close();
  }
  const isData = (p: { path: string; position: number }) => p.path.endsWith("/extent.dat") || (p.path.endsWith("/volume.dat") && p.position < extentEnd);
  const pending = new Set(layer.pendingWritesAt(layer.opCount()).filter(isData).map((p) => p.id));
  const again = await SmartWalVolume.open(DIR, { fileLayer: layer.crashAt(layer.opCount(), { keep: (id) => pending.has(id) }), extentBarrier: w.extentBarrier });
  try {
    const L2 = again.recovery.lastLsn;
    if (L2 < L || again.recovery.damaged.length > 0) {
      res.lostAcked++;
      res.problems.push(`after a second crash: recovered LSN ${L2} (first recovery ${L}), damaged ${JSON.stringify(again.recovery.damaged)}`);
      return;
    }
    for (let lba = 0; lba < w.blockCount; lba++) {
      const got = await again.read(lba);
      const f = fresh.get(lba);
      if (f && f.lsn <= L2 && same(f.data, got)) continue;
      const vs = w.versions[lba]!;
      if (!vs.some((v, i) => v.lsnLow <= L && vs.slice(i + 1).every((later) => later.lsnHigh > L) && same(v.data, got))) {
        res.lostAcked++;
        res.problems.push(`after a second crash: LBA ${lba} no longer holds what the first recovery gave`);
      }
    }
  } finally {
    await again.close();
  }
}

function same(expected: Uint8Array | null, got: Uint8Array): boolean {
  if (expected === null) return got.every((b) => b === 0);
  return Buffer.from(expected).equals(Buffer.from(got));
}

/** A stable identity of a crashed disk image, to count distinct crash states. */
export function imageHash(layer: CrashFileLayer): string {
  const h = createHash("sha1");
  for (const [path, bytes] of [...layer.snapshotFiles().entries()].sort(([a], [b]) => a.localeCompare(b))) {
    h.update(path);
    h.update(String(bytes.length));
    h.update(bytes);
  }
  return h.digest("hex");
}

/**
 * The crash specs explored at one crash point: drop every unsynced write, keep them all, `subsets`
 * random subsets, and `tears` random tears of a multi-sector pending write (with a random subset
 * of the other writes kept).
 */
export function specsAt(w: Workload, at: number, rnd: () => number, subsets: number, tears: number): { name: string; spec: CrashSpec }[] {
  const pending = w.fl.pendingWritesAt(at);
  const out: { name: string; spec: CrashSpec }[] = [{ name: "drop", spec: { keep: "none" } }];
  if (pending.length === 0) return out;
  out.push({ name: "keep-all", spec: { keep: "all" } });
  for (let i = 0; i < subsets && pending.length > 1; i++) {
    const kept = new Set(pending.filter(() => rnd() < 0.5).map((p) => p.id));
    out.push({ name: `subset-${i}`, spec: { keep: (id) => kept.has(id) } });
  }
  const tearable = pending.filter((p) => p.length > 512);
  for (let i = 0; i < tears && tearable.length > 0; i++) {
    const victim = tearable[Math.floor(rnd() * tearable.length)]!;
    const sectors = Math.ceil(victim.length / 512) + 1;
    const landed = Array.from({ length: sectors }, (_, s) => s).filter(() => rnd() < 0.5);
    const kept = new Set(pending.filter((p) => p.id === victim.id || rnd() < 0.5).map((p) => p.id));
    out.push({ name: `tear-${i}`, spec: { keep: (id) => kept.has(id), tear: new Map([[victim.id, landed]]) } });
  }
  return out;
}

export interface Tally {
  states: number;
  /** Distinct (disk image, acknowledged LSN) pairs checked. */
  distinct: Set<string>;
  /** Distinct disk images alone. */
  images: Set<string>;
  lostAcked: number;
  silentCorruptions: number;
  damaged: number;
  lsnProblems: number;
  /** Crash states in which recovery cut deferred-barrier records whose data never reached the disk. */
  statesWithUnsyncedCut: number;
  problems: string[];
}

export const newTally = (): Tally => ({ states: 0, distinct: new Set(), images: new Set(), lostAcked: 0, silentCorruptions: 0, damaged: 0, lsnProblems: 0, statesWithUnsyncedCut: 0, problems: [] });

/** Explores every crash point of `w` with drop / keep-all / random subsets / torn sectors. */
export async function explore(w: Workload, seed: number, tally: Tally, opts: { subsets: number; tears: number; allowDamage: boolean }): Promise<void> {
  const rnd = prng(seed ^ 0x5eed);
  for (let at = 0; at <= w.fl.opCount(); at++) {
    const acked = ackedAt(w, at);
    for (const { name, spec } of specsAt(w, at, rnd, opts.subsets, opts.tears)) {
      const layer = w.fl.crashAt(at, spec);
      const hash = imageHash(layer);
      const key = `${hash}:${acked}`;
      tally.states++;
      tally.images.add(hash);
      if (tally.distinct.has(key)) continue;
      tally.distinct.add(key);
      try {
        const r = await checkState(w, layer, acked, opts.allowDamage, tally.distinct.size % 7 === 0, tally.distinct.size % 7 === 3);
        tally.lostAcked += r.lostAcked;
        tally.silentCorruptions += r.silentCorruptions;
        tally.damaged += r.damaged;
        tally.lsnProblems += r.lsnProblems;
        if (r.unsyncedCut > 0) tally.statesWithUnsyncedCut++;
        for (const p of r.problems) tally.problems.push(`seed ${seed} op ${at} ${name}: ${p}`);
      } catch (err) {
        // Before the header is durable there is no volume yet: that is the only acceptable refusal.
        if (err instanceof VolumeNotFoundError && at < w.mountedAt) continue;
        tally.problems.push(`seed ${seed} op ${at} ${name}: mount threw ${String(err)}`);
        tally.silentCorruptions++;
      }
    }
  }
}

/**
 * The property both layouts' crash tests check with the extent barrier at SyncCache: any workload,
 * any crash point with at least two writes in flight (where a record can land without its data),
 * any subset of them kept and any tear of a kept one loses no SyncCache-acknowledged write and
 * returns no wrong byte.
 */
export function inFlightCrashProperty(layout?: VolumeLayout) {
  return fc.asyncProperty(
    fc.integer({ min: 1, max: 1_000_000 }),
    fc.integer({ min: 4, max: 24 }),
    fc.noBias(fc.nat()),
    fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
    fc.option(fc.array(fc.nat({ max: 9 }), { maxLength: 10 })),
    async (seed, steps, where, keepBits, tearSectors) => {
      const w = await runWorkload(seed, VolumeMode.SmartWal, steps, undefined, undefined, "sync-cache", layout);
      const points = Array.from({ length: w.fl.opCount() - w.mountedAt + 1 }, (_, k) => w.mountedAt + k).filter((k) => w.fl.pendingWritesAt(k).length >= 2);
      if (points.length === 0) return true;
      const at = points[where % points.length]!;
      const pending = w.fl.pendingWritesAt(at);
      const kept = new Set(pending.filter((_, k) => keepBits[k % keepBits.length]).map((p) => p.id));
      const victim = pending.find((p) => p.length > 512 && kept.has(p.id));
      const tear = tearSectors && victim ? new Map([[victim.id, tearSectors]]) : undefined;
      const r = await checkState(w, w.fl.crashAt(at, { keep: (id) => kept.has(id), ...(tear ? { tear } : {}) }), ackedAt(w, at), false, true);
      return r.lostAcked + r.silentCorruptions + r.damaged + r.lsnProblems === 0;
    },
  );
}

/** The checks every clean exploration passes: no problem, lost write, wrong byte, damage or LSN gap, and at least `minImages` distinct disk images. */
export function assertClean(t: ExecutionContext, tally: Tally, minImages: number): void {
  t.log(`states explored ${tally.states}, distinct (image, ack) ${tally.distinct.size}, distinct disk images ${tally.images.size}, states with unsynced records cut ${tally.statesWithUnsyncedCut}`);
  t.deepEqual(tally.problems.slice(0, 5), []);
  t.is(tally.lostAcked, 0);
  t.is(tally.silentCorruptions, 0);
  t.is(tally.damaged, 0);
  t.is(tally.lsnProblems, 0);
  t.true(tally.images.size >= minImages, `only ${tally.images.size} distinct crash states`);
}
