import { CustodyError } from "../../core/index.ts";
import type { FileLayer } from "../../core/index.ts";
import type { WriteRecord } from "../../transport/protocol/index.ts";
import { BLOCK_SIZE, openStagedVolume, SmartWalVolume } from "../../volume/index.ts";

/** What a recovery's build is doing: pre-allocating its files, applying records, or reading the result back. */
export type BuildPhase = "allocate" | "apply" | "verify";

/** Progress of one phase: `done` of `total` (bytes for `allocate`, records for `apply`, blocks for `verify`). */
export interface BuildProgress {
  readonly phase: BuildPhase;
  readonly done: number;
  readonly total: number;
  /** Bytes handled so far in this phase. */
  readonly bytes: number;
  /** Bytes the phase handles in all, when known and not `total` itself. */
  readonly totalBytes?: number;
}

/** Thrown when the built volume does not read back what the recovery applied to it. */
export class RecoveryVerifyError extends CustodyError {
  constructor(dir: string, lba: number, why: string) {
    super(
      "recovery_verify_failed",
      `the volume built at ${dir} reads back wrong at block ${lba} (${why}); it was not sealed`,
      { dir, lba },
    );
  }
}

/** Blocks read back per step. */
const CHUNK = 256;

/**
 * Reads the staged volume at `dir` back (mounted with a scrub: every block its checkpoint names
 * matches its CRC) and compares every block with what the recovery put there: the newest of
 * `records` that covers it, else the base's block, else zeros. Throws RecoveryVerifyError at the
 * first difference; `signal` is checked between chunks.
 */
export async function checkBuiltVolume(
  fl: FileLayer,
  dir: string,
  o: {
    readonly blockCount: number;
    readonly records: readonly WriteRecord[];
    readonly baseDir?: string;
    readonly signal?: AbortSignal;
    readonly onProgress?: (p: BuildProgress) => void;
  },
): Promise<void> {
  const expected = new Map<number, Uint8Array>();
  for (const r of [...o.records].sort((a, b) => a.lsn - b.lsn)) {
    for (let k = 0; k * BLOCK_SIZE < r.data.byteLength; k++)
      expected.set(r.lba + k, r.data.subarray(k * BLOCK_SIZE, (k + 1) * BLOCK_SIZE));
  }
  const built = await openStagedVolume(fl, dir, { scrub: true });
  const base = o.baseDir !== undefined ? await SmartWalVolume.open(o.baseDir, { fileLayer: fl }) : undefined;
  const zero = new Uint8Array(BLOCK_SIZE);
  try {
    if (built.recovery.knownDamaged.length > 0)
      throw new RecoveryVerifyError(dir, built.recovery.knownDamaged[0]!, "its data does not match its checksum");
    for (let lba = 0; lba < o.blockCount; lba += CHUNK) {
      o.signal?.throwIfAborted();
      const n = Math.min(CHUNK, o.blockCount - lba);
      const got = await built.read(lba, n);
      const from = base !== undefined ? await base.read(lba, n) : undefined;
      for (let i = 0; i < n; i++) {
        const want = expected.get(lba + i) ?? from?.subarray(i * BLOCK_SIZE, (i + 1) * BLOCK_SIZE) ?? zero;
        if (!Buffer.from(got.buffer, got.byteOffset + i * BLOCK_SIZE, BLOCK_SIZE).equals(want))
          throw new RecoveryVerifyError(
            dir,
            lba + i,
            expected.has(lba + i)
              ? "not the newest record's data"
              : base !== undefined
                ? "not the base's block"
                : "not zeros",
          );
      }
      o.onProgress?.({ phase: "verify", done: lba + n, total: o.blockCount, bytes: (lba + n) * BLOCK_SIZE });
    }
  } finally {
    await built.close();
    await base?.close();
  }
}
