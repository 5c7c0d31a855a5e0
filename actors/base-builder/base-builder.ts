import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { baseSubject } from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import { encodeMessage } from "../../transport/protocol/index.ts";
import { baseReadySpec } from "../../transport/protocol/index.ts";
import { fetchUnits } from "../repair/index.ts";
import { applyRecords, contiguousFrom, openUnits } from "../repair/index.ts";
import { copyVolumeFiles, SmartWalVolume } from "../../volume/index.ts";

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
  /**
   * At most this many sequences go into one build (bounds the builder's memory); more wait for the next. Default 4 ×
   * minNewSeqs.
   */
  readonly maxSeqsPerBuild?: number;
  /**
   * A build still running after this long is abandoned (counted, its files deleted) so the next can start. Default 10
   * minutes.
   */
  readonly buildTimeoutMs?: number;
}

/** Where a build is: the probe, copying the current base, fetching WAL, applying it, syncing, publishing. */
export type BaseBuildPhase = "idle" | "probe" | "copy" | "fetch" | "apply" | "sync" | "publish";

/** Thrown when a build outlived `buildTimeoutMs`; names the phase it was stuck in. */
export class BaseBuildTimeoutError extends CustodyError {
  constructor(detail: { phase: BaseBuildPhase; phaseMs: number; timeoutMs: number }) {
    super(
      "base_build_timeout",
      `a base build was still in its ${detail.phase} phase after ${detail.timeoutMs} ms; abandoned`,
      detail,
    );
  }
}

const DEFAULT_BUILD_TIMEOUT_MS = 10 * 60_000;

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
  /** The build running now (at most one); an abandoned one no longer counts. */
  private running: { readonly signal: AbortSignal; readonly started: number } | undefined;
  private phase: BaseBuildPhase = "idle";
  private phaseSince = 0;
  private attempts = 0;

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
    removeBuildDirs(cfg.dir); // what a killed process was building
  }

  /** The newest base built (undefined before the first). */
  get base(): BuiltBase | undefined {
    return this.current;
  }

  /**
   * The running build's phase and how long it has been in it and in all (zeros when idle): what `custody ps` shows of a
   * slow build.
   */
  progress(now = Date.now()): { readonly phase: BaseBuildPhase; readonly phaseMs: number; readonly buildMs: number } {
    const r = this.running;
    if (r === undefined) return { phase: "idle", phaseMs: 0, buildMs: 0 };
    return { phase: this.phase, phaseMs: now - this.phaseSince, buildMs: now - r.started };
  }

  /** Re-announces the current base (the holder may have restarted and forgotten it). */
  announce(): void {
    const b = this.current;
    if (b === undefined) return;
    this.transport.publish(
      baseSubject(this.cfg.holderId),
      encodeMessage(baseReadySpec, {
        holder: this.cfg.holderId,
        volume: this.cfg.volume,
        lane: this.cfg.lane,
        snapshotId: b.snapshotId,
        throughSeq: b.throughSeq,
        bytes: b.bytes,
      }),
    );
  }

  /**
   * One build attempt. A one-unit probe asks the holder whether the sequence `minNewSeqs` past the
   * current base is there yet; if so, a new base is materialized: the current base copied into a
   * fresh volume, then the holder's WAL applied chunk by chunk (`BUILD_CHUNK_SEQS` at a time, every
   * digest checked and payload authenticated), as far as it runs contiguously, up to
   * `maxSeqsPerBuild`. Memory stays at one chunk whatever the backlog. Made durable, published
   * (`current.json`) and announced. Returns the new base, or undefined when it is not time yet
   * (or a build is running). Throws what the fetch or the checks throw, or BaseBuildTimeoutError
   * after `buildTimeoutMs` (nothing is published then; the next call starts afresh, so one step
   * that never returns cannot stop the bases for good).
   */
  async build(): Promise<BuiltBase | undefined> {
    if (this.running !== undefined) return undefined;
    const abort = new AbortController();
    const tmp = join(this.cfg.dir, `building-${++this.attempts}.tmp`);
    this.running = { signal: abort.signal, started: Date.now() };
    this.enter("probe", abort.signal);
    const timeoutMs = this.cfg.buildTimeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new BaseBuildTimeoutError({ phase: this.phase, phaseMs: Date.now() - this.phaseSince, timeoutMs });
        abort.abort(err);
        reject(err);
      }, timeoutMs);
    });
    const work = this.attempt(tmp, abort.signal);
    work.catch(() => undefined); // an abandoned attempt's late failure is nobody's to handle
    try {
      return await Promise.race([work, deadline]);
    } finally {
      clearTimeout(timer);
      rmSync(tmp, { recursive: true, force: true });
      this.running = undefined;
      this.phase = "idle";
    }
  }

  /** Moves the running build to `phase`; an abandoned attempt stops at its next step instead. */
  private enter(phase: BaseBuildPhase, signal: AbortSignal): void {
    signal.throwIfAborted();
    this.phase = phase;
    this.phaseSince = Date.now();
  }

  /** Units `seqs` of the lane, read from this builder's holder (10 s per answer). */
  private fetch(seqs: RangeSet): ReturnType<typeof fetchUnits> {
    return fetchUnits(this.transport, this.cfg.holderId, this.cfg.volume, this.cfg.lane, seqs, 10_000);
  }

  private async attempt(tmp: string, signal: AbortSignal): Promise<BuiltBase | undefined> {
    const cur = this.current;
    const from = (cur?.throughSeq ?? 0) + 1;
    const probeSeq = from + this.cfg.minNewSeqs - 1;
    const probe = await this.fetch(RangeSet.of(probeSeq, probeSeq));
    if (probe.length === 0) return undefined;
    this.enter("copy", signal);
    removeBuildDirs(this.cfg.dir);
    // The next base starts as a file copy of the current one (a closed volume is its files), then
    // takes the WAL after it. Reading the base block by block through this process cost a 16 MB
    // volume's worth of buffers per build.
    if (cur !== undefined) await copyVolumeFiles(cur.dir, tmp, signal);
    else await SmartWalVolume.create(tmp, { blockCount: this.cfg.blockCount });
    const vol = await SmartWalVolume.open(tmp);
    let through = from - 1;
    try {
      const last = from + (this.cfg.maxSeqsPerBuild ?? 4 * this.cfg.minNewSeqs) - 1;
      while (through < last) {
        this.enter("fetch", signal);
        const hi = Math.min(last, through + BUILD_CHUNK_SEQS);
        const units = await this.fetch(RangeSet.of(through + 1, hi));
        this.enter("apply", signal);
        const records = openUnits(this.cfg.volume, [this.cfg.lane], this.dataKey, units).byLane.get(this.cfg.lane)!;
        const end = Math.min(last, contiguousFrom(records, through + 1));
        if (end <= through) break;
        const run = [];
        for (let seq = through + 1; seq <= end; seq++) run.push(records.get(seq)!);
        await applyRecords(vol, run, signal);
        through = end;
        if (end < hi) break; // a hole, or the end of what the holder has
      }
      this.enter("sync", signal);
      await vol.syncCache();
    } finally {
      await vol.close();
    }
    if (through - from + 1 < this.cfg.minNewSeqs) {
      // The probe found enough new WAL but it does not run on from the base: a hole at the holder.
      this.counters.inc("base_build_short");
      return undefined;
    }
    // From here to the announcement nothing awaits: an abandoned attempt cannot publish half a base.
    this.enter("publish", signal);
    const name = `base-${through}`;
    const final = join(this.cfg.dir, name);
    rmSync(final, { recursive: true, force: true });
    renameSync(tmp, final);
    syncDir(this.cfg.dir);
    const built: BuiltBase = { snapshotId: name, throughSeq: through, dir: final, bytes: dirBytes(final) };
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
  }
}

/** Deletes every build directory in `dir`: one a killed process left, or one an abandoned attempt still writes into. */
function removeBuildDirs(dir: string): void {
  for (const n of readdirSync(dir))
    if (n.startsWith("building")) rmSync(join(dir, n), { recursive: true, force: true });
}

/** Sequences fetched and applied at a time while building a base (bounds the builder's memory). */
export const BUILD_CHUNK_SEQS = 2048;

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
