import { readFileSync, writeFileSync } from "node:fs";
import { crc32 } from "node:zlib";
import type { Command } from "commander";
import { action, printResult, type OutputOptions } from "../output.ts";
import {
  BadRequestError,
  BLOCK_SIZE,
  inspectVolume,
  SmartWalVolume,
  VolumeLayout,
  VolumeMode,
  WalDamagedError,
  type RecoveryReport,
  type VolumeMode as Mode,
} from "../../volume/index.ts";
import { nodeFileLayer } from "../../core/index.ts";

/** Parses a non-negative integer option; a bad value is a BadRequestError naming the option. */
function int(name: string, v: string | undefined, dflt?: number): number {
  if (v === undefined) {
    if (dflt === undefined) throw new BadRequestError(`--${name} is required`, { option: name });
    return dflt;
  }
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new BadRequestError(`--${name} must be a non-negative integer, got ${v}`, { option: name, value: v });
  return n;
}

/** The bytes to write: --fill (one byte value repeated), --hex, --text or --file, padded with zeros to whole blocks. */
function payload(o: { fill?: string; hex?: string; text?: string; file?: string; blocks?: string }): Uint8Array {
  const given = [o.fill, o.hex, o.text, o.file].filter((x) => x !== undefined).length;
  if (given !== 1) throw new BadRequestError("give exactly one of --fill, --hex, --text, --file");
  let raw: Uint8Array;
  if (o.fill !== undefined) {
    const b = int("fill", o.fill);
    if (b > 255) throw new BadRequestError("--fill must be 0..255", { value: o.fill });
    raw = new Uint8Array(int("blocks", o.blocks, 1) * BLOCK_SIZE).fill(b);
  } else if (o.hex !== undefined) {
    if (!/^([0-9a-fA-F]{2})*$/.test(o.hex)) throw new BadRequestError("--hex must be an even number of hex digits");
    raw = Uint8Array.from(Buffer.from(o.hex, "hex"));
  } else if (o.text !== undefined) raw = new TextEncoder().encode(o.text);
  else raw = Uint8Array.from(readFileSync(o.file!));
  const blocks = Math.max(1, Math.ceil(raw.length / BLOCK_SIZE));
  const out = new Uint8Array(blocks * BLOCK_SIZE);
  out.set(raw);
  return out;
}

async function withVolume<T>(
  dir: string,
  fn: (v: SmartWalVolume) => Promise<T>,
  scrub = false,
  acceptLoss = false,
): Promise<T> {
  const vol = await SmartWalVolume.open(dir, { scrub, acceptLoss });
  try {
    return await fn(vol);
  } finally {
    await vol.close();
  }
}

/** Registers `custody volume create|write|sync|read|recover|inspect`. */
export function register(program: Command): void {
  const vol = program
    .command("volume")
    .description("SmartWAL block volumes: create, write, sync, read, recover, inspect");
  registerCreate(vol);
  registerWrite(vol);
  registerSync(vol);
  registerRead(vol);
  registerRecover(vol);
  registerInspect(vol);
}

/** `custody volume create <dir>`: a new volume with its files pre-allocated. */
function registerCreate(vol: Command): void {
  vol
    .command("create <dir>")
    .description("create a volume (pre-allocated extent, WAL ring, checkpoints, header)")
    .requiredOption("--blocks <n>", "logical 4 KiB blocks")
    .option("--mode <mode>", "smartwal | inline", "smartwal")
    .option(
      "--wal-capacity <n>",
      "WAL ring slots (default: the spare, at least 1024, so one write of up to the spare's blocks fits)",
    )
    .option("--spare <n>", "copy-on-write spare blocks (smartwal; default max(64, blocks/8))")
    .option("--epoch <n>", "epoch", "1")
    .option(
      "--layout <layout>",
      "split (extent.dat + wal.ring) | one-file (volume.dat: one fdatasync covers both); default per " +
        "docs/volume-format.md",
    )
    .option("--json", "one JSON object on one line")
    .action(
      action(
        async (
          dir: string,
          o: OutputOptions & {
            blocks: string;
            mode: string;
            walCapacity?: string;
            spare?: string;
            epoch: string;
            layout?: string;
          },
        ) => {
          if (o.mode !== VolumeMode.SmartWal && o.mode !== VolumeMode.Inline)
            throw new BadRequestError(`--mode must be smartwal or inline, got ${o.mode}`);
          if (o.layout !== undefined && o.layout !== VolumeLayout.Split && o.layout !== VolumeLayout.OneFile) {
            throw new BadRequestError(`--layout must be split or one-file, got ${o.layout}`, {
              option: "layout",
              value: o.layout,
            });
          }
          const g = await SmartWalVolume.create(dir, {
            blockCount: int("blocks", o.blocks),
            mode: o.mode as Mode,
            ...(o.walCapacity !== undefined ? { walCapacity: int("wal-capacity", o.walCapacity) } : {}),
            ...(o.spare !== undefined ? { spareBlocks: int("spare", o.spare) } : {}),
            epoch: int("epoch", o.epoch),
            ...(o.layout !== undefined ? { layout: o.layout as VolumeLayout } : {}),
          });
          printResult(o, { dir, ...g }, [{ dir, ...g }], "created");
        },
      ),
    );
}

/** `custody volume write <dir>`: whole blocks at an LBA, then syncCache. */
function registerWrite(vol: Command): void {
  vol
    .command("write <dir>")
    .description("write whole blocks at an LBA, then syncCache (prints the LSN and the durable LSN)")
    .requiredOption("--lba <n>", "first block")
    .option("--fill <byte>", "repeat one byte value")
    .option("--blocks <n>", "blocks for --fill", "1")
    .option("--hex <hex>", "bytes in hex (zero-padded to whole blocks)")
    .option("--text <s>", "UTF-8 text (zero-padded)")
    .option("--file <path>", "bytes of a file (zero-padded)")
    .option("--no-sync", "skip the syncCache after the write")
    .option("--json", "one JSON object on one line")
    .action(
      action(
        async (
          dir: string,
          o: OutputOptions & {
            lba: string;
            fill?: string;
            blocks?: string;
            hex?: string;
            text?: string;
            file?: string;
            sync: boolean;
          },
        ) => {
          const data = payload(o);
          const lba = int("lba", o.lba);
          const res = await withVolume(dir, async (v) => {
            const lsn = await v.write(lba, data);
            const durableLsn = o.sync ? await v.syncCache() : v.walWindow().durable;
            return { lba, blocks: data.length / BLOCK_SIZE, lsn, durableLsn };
          });
          printResult(o, res, [res]);
        },
      ),
    );
}

/** `custody volume sync <dir>`: mount and syncCache; prints the durability proof. */
function registerSync(vol: Command): void {
  vol
    .command("sync <dir>")
    .description("mount (recovering if needed) and syncCache; prints the durability proof")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (dir: string, o: OutputOptions) => {
        const proof = await withVolume(dir, async (v) => {
          await v.syncCache();
          return v.durabilityProof();
        });
        printResult(o, proof, [{ ...proof, barriers: proof.barriers.join(",") }]);
      }),
    );
}

/** `custody volume read <dir>`: blocks with their CRC32 (or their raw bytes to a file). */
function registerRead(vol: Command): void {
  vol
    .command("read <dir>")
    .description("read blocks; prints each block's CRC32 and first bytes (or writes raw bytes with --out)")
    .requiredOption("--lba <n>", "first block")
    .option("--count <n>", "blocks", "1")
    .option("--out <path>", "write the raw bytes to a file")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (dir: string, o: OutputOptions & { lba: string; count: string; out?: string }) => {
        const lba = int("lba", o.lba);
        const count = int("count", o.count);
        const data = await withVolume(dir, (v) => v.read(lba, count));
        if (o.out) writeFileSync(o.out, data);
        const blocks = Array.from({ length: count }, (_, k) => {
          const b = data.subarray(k * BLOCK_SIZE, (k + 1) * BLOCK_SIZE);
          return {
            lba: lba + k,
            crc32: (crc32(b) >>> 0).toString(16).padStart(8, "0"),
            zero: b.every((x) => x === 0),
            head: Buffer.from(b.subarray(0, 16)).toString("hex"),
          };
        });
        printResult(o, { lba, count, blocks, ...(o.out ? { out: o.out } : {}) }, blocks);
      }),
    );
}

/** `custody volume recover <dir>`: crash recovery and its report. */
function registerRecover(vol: Command): void {
  vol
    .command("recover <dir>")
    .description("mount the volume, run crash recovery and print the recovery report")
    .option("--scrub", "also verify every checkpoint-named block against its CRC")
    .option("--accept-loss", "mount even when records inside the WAL are unreadable, dropping them")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (dir: string, o: OutputOptions & { scrub?: boolean; acceptLoss?: boolean }) => {
        let report: RecoveryReport;
        try {
          report = await withVolume(dir, async (v) => v.recovery, o.scrub ?? false, o.acceptLoss ?? false);
        } catch (err) {
          // Refused for WAL damage: the report still goes to stdout, the typed error line to stderr (exit 1).
          if (err instanceof WalDamagedError && err.report)
            printResult(o, { error: err.code, ...err.report }, [{ error: err.code, lost: err.lostLsns.join(",") }]);
          throw err;
        }
        printResult(o, report, [
          {
            mode: report.mode,
            checkpoint: `slot ${report.checkpoint.slot} seq ${report.checkpoint.sequence} lsn ${report.checkpoint.lsn}`,
            replayed: report.replayedRecords,
            lastLsn: report.lastLsn,
            stop: `${report.stopReason}@${report.stopDetail.slot}`,
            erased: report.erasedTailRecords,
            lost: report.lostRecords.map((l) => l.lsn).join(",") || "-",
            damaged: report.knownDamaged.join(",") || "-",
            issues: report.checkpointIssues.map((i) => `slot ${i.slot}: ${i.problem}`).join("; ") || "-",
          },
        ]);
      }),
    );
}

/** `custody volume inspect <dir>`: a read-only view of the files. */
function registerInspect(vol: Command): void {
  vol
    .command("inspect <dir>")
    .description("read-only view of header, checkpoints and WAL ring (no recovery)")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (dir: string, o: OutputOptions) => {
        const ins = await inspectVolume(nodeFileLayer, dir);
        const rows: Record<string, unknown>[] = [
          { part: "geometry", detail: ins.geometry },
          { part: "files", detail: ins.files },
          ...ins.checkpoints.map((c) => ({ part: `checkpoint.${c.slot}`, detail: c })),
          { part: "ring", detail: ins.ring },
          { part: "wal", detail: { slotBytes: ins.walSlotBytes, entriesPer64MiB: ins.entriesPer64MiB } },
        ];
        printResult(o, ins, rows);
      }),
    );
}
