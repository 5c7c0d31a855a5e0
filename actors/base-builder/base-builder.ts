import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Counters } from "../../core/counters.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { baseSubject } from "../../transport/subjects.ts";
import type { Transport } from "../../transport/transport.ts";
import { encodeMessage } from "../../transport/wire/index.ts";
import { baseReadySpec } from "../holder/holder-messages.ts";
import { fetchUnits } from "../repair/custody-reader.ts";
import { recoverVolume } from "../repair/volume-recovery.ts";

/** Where the builder keeps its bases and what it builds. */
export interface BaseBuilderConfig {
  readonly holderId: string;
  readonly volume: string;
  readonly lane: string;
  readonly blockCount: number;
  /** Directory of the base snapshots (`base-<throughSeq>/`) and `current.json`. */
  readonly dir: string;
  /** Build a new base once at least this many new sequences are contiguous after the current one. */
  readonly minNewSeqs: number;
}

/** The base a builder holds now. */
export interface BuiltBase {
  readonly snapshotId: string;
  readonly throughSeq: number;
  readonly dir: string;
  readonly bytes: number;
}

/**
 * Rolling bases beside a store holder: a role with the volume's data key (as recovery has; the
 * holder itself never sees it) that materializes a new base snapshot from the current base plus
 * the holder's WAL — read from the holder over NATS, every digest checked and payload
 * authenticated — once enough new WAL accumulated. A base is a SmartWAL volume directory, made
 * durable, then published atomically (`current.json`) and announced to the holder
 * (`custody.v1.base.<holder>`), which names it in its receipts so WAL below it can be released.
 * The previous base stays until a newer one replaces it (a recovery may be reading it); older
 * ones are deleted.
 */
export class BaseBuilder {
  private current: BuiltBase | undefined;
  private building = false;

  constructor(
    private readonly cfg: BaseBuilderConfig,
    private readonly transport: Transport,
    private readonly counters: Counters,
    /** The volume's data key (from the key authority; the holder never has it). */
    private readonly dataKey: Uint8Array,
  ) {
    mkdirSync(cfg.dir, { recursive: true });
    const manifest = join(cfg.dir, "current.json");
    if (existsSync(manifest)) this.current = JSON.parse(readFileSync(manifest, "utf8")) as BuiltBase;
  }

  /** The newest base built (undefined before the first). */
  get base(): BuiltBase | undefined {
    return this.current;
  }

  /** Re-announces the current base (the holder may have restarted and forgotten it). */
  announce(): void {
    const b = this.current;
    if (b === undefined) return;
    this.transport.publish(
      baseSubject(this.cfg.holderId),
      encodeMessage(baseReadySpec, { holder: this.cfg.holderId, volume: this.cfg.volume, lane: this.cfg.lane, snapshotId: b.snapshotId, throughSeq: b.throughSeq, bytes: b.bytes }),
    );
  }

  /**
   * One build attempt: reads the WAL after the current base from the holder and, when at least
   * `minNewSeqs` contiguous sequences are there, materializes and announces a new base through the
   * last of them. Returns the new base, or undefined when it is not time yet. Throws what the
   * fetch or the recovery throws (nothing is published then).
   */
  async build(): Promise<BuiltBase | undefined> {
    if (this.building) return undefined;
    this.building = true;
    try {
      const from = (this.current?.throughSeq ?? 0) + 1;
      const units = await fetchUnits(this.transport, this.cfg.holderId, this.cfg.volume, this.cfg.lane, RangeSet.of(from, Number.MAX_SAFE_INTEGER), 10_000);
      let seqs = RangeSet.EMPTY;
      for (const u of units) seqs = seqs.add(u.firstSeq, u.lastSeq);
      const through = seqs.contiguousThrough(from);
      if (through - from + 1 < this.cfg.minNewSeqs) return undefined;
      const name = `base-${through}`;
      const tmp = join(this.cfg.dir, `${name}.tmp`);
      rmSync(tmp, { recursive: true, force: true });
      const cur = this.current;
      const result = await recoverVolume({
        volume: this.cfg.volume,
        dir: tmp,
        blockCount: this.cfg.blockCount,
        lanes: [this.cfg.lane],
        dataKey: this.dataKey,
        units,
        upTo: { [this.cfg.lane]: through },
        ...(cur !== undefined ? { base: { dir: cur.dir, cut: { [this.cfg.lane]: cur.throughSeq } } } : {}),
      });
      const final = join(this.cfg.dir, name);
      renameSync(tmp, final);
      syncDir(this.cfg.dir);
      const built: BuiltBase = { snapshotId: name, throughSeq: result.cut[this.cfg.lane]!, dir: final, bytes: dirBytes(final) };
      const manifestTmp = join(this.cfg.dir, "current.json.tmp");
      writeFileSync(manifestTmp, JSON.stringify(built));
      fsyncFile(manifestTmp);
      renameSync(manifestTmp, join(this.cfg.dir, "current.json"));
      syncDir(this.cfg.dir);
      // Keep the previous base (a recovery may be reading it); delete everything older.
      for (const n of readdirSync(this.cfg.dir)) {
        if (!n.startsWith("base-") || n === name || (cur !== undefined && join(this.cfg.dir, n) === cur.dir)) continue;
        rmSync(join(this.cfg.dir, n), { recursive: true, force: true });
      }
      this.current = built;
      this.counters.inc("bases_built");
      this.announce();
      return built;
    } finally {
      this.building = false;
    }
  }
}

function fsyncFile(path: string): void {
  const fd = openSync(path, "r+");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function syncDir(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function dirBytes(path: string): number {
  let n = 0;
  for (const f of readdirSync(path, { withFileTypes: true })) if (f.isFile()) n += statSync(join(path, f.name)).size;
  return n;
}
