// Stress driver for the volume SIGKILL test: runs its write → SIGKILL → reopen-and-check rounds
// with many seeds and kill delays, and on a lost acknowledged write records everything needed to
// explain it (pre-recovery copy of the files, recovery report, the LBA's WAL records, checkpoints,
// the writer's output). Usage:
//   [SIGKILL_STRESS_SOURCE=log|exit|close] nice -n 10 npx tsx test/volume/sigkill-stress.ts <per-batch|sync-cache> <firstSeed> <seeds> [rounds=20] [outDir]
// Prints one line per seed and, at the end, a JSON summary on the last line.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeCheckpoint, decodeHeader, decodeRecord, SmartWalVolume, VolumeFiles, type ExtentBarrier } from "../../volume/index.ts";
import { blockFor } from "./fixtures/block-pattern.ts";
import { runAndKill } from "./fixtures/run-and-kill.ts";

const WRITER = new URL("./fixtures/crash-writer.ts", import.meta.url).pathname;
const [barrierArg, firstSeedArg, seedsArg, roundsArg, outArg] = process.argv.slice(2);
const barrier: ExtentBarrier = barrierArg === "sync-cache" ? "sync-cache" : "per-batch";
const firstSeed = Number(firstSeedArg ?? 1);
const seeds = Number(seedsArg ?? 10);
const rounds = Number(roundsArg ?? 20);
const outDir = outArg ?? join(tmpdir(), "sigkill-stress-failures");
/**
 * Which writer statements the check believes: "log" (default, what the test uses now: the statement
 * log), "exit" (stdout lines seen at the 'exit' event: the test before the fix) or "close".
 */
const source = (process.env.SIGKILL_STRESS_SOURCE ?? "log") as "log" | "exit" | "close";
/** Rounds in which stdout (at 'exit' / at 'close') lacked "issue" statements the log has, and how many. */
const missing = { exitRounds: 0, exitIssues: 0, closeRounds: 0, closeIssues: 0 };

/** Every valid ring record naming `lba`, and both checkpoints' LSN/sequence and their mapping of it, read from a file copy. */
async function describeFiles(dir: string, lba: number): Promise<unknown> {
  const g = decodeHeader(await readFile(join(dir, VolumeFiles.header)));
  const wal = await readFile(join(dir, VolumeFiles.wal));
  const records = [];
  for (let s = 0; s < g.walCapacity; s++) {
    const r = decodeRecord(wal.subarray(s * g.walSlotSize, (s + 1) * g.walSlotSize));
    if (typeof r === "string") continue;
    if (r.lba <= lba && lba < r.lba + r.blockCount) records.push({ slot: s, lsn: r.lsn, phys: r.physicalOffset / 4096, flag: r.flag, crc: r.dataCrc, watermark: r.durableLsn, deferred: r.deferredBarrier });
  }
  const checkpoints = [];
  for (const name of VolumeFiles.checkpoints) {
    const c = decodeCheckpoint(await readFile(join(dir, name)), g.blockCount, g.physicalBlocks, g.walCapacity);
    checkpoints.push(typeof c === "string" ? { problem: c } : { sequence: c.sequence, lsn: c.lsn, ringStartSlot: c.ringStartSlot, phys: c.map.phys[lba], mapLsn: c.map.lsn[lba] });
  }
  return { records: records.sort((a, b) => a.lsn - b.lsn), checkpoints };
}

/** Which id's block the extent holds at physical block `p` (searching the ids issued so far), or undefined. */
async function whoseBlock(extent: Buffer, p: number, ids: Iterable<number>): Promise<number | undefined> {
  const blk = extent.subarray(p * 4096, (p + 1) * 4096);
  for (const id of ids) if (blk.equals(blockFor(id))) return id;
  return undefined;
}

/** One test run (20 rounds by default) from `seed0`; returns the failure description, or undefined. */
async function runSeed(seed0: number): Promise<{ acked: number; failure?: unknown }> {
  const dir = await mkdtemp(join(tmpdir(), "sigkill-stress-"));
  const history = new Map<number, { ids: number[]; acked: number }>();
  const lbaOf = new Map<number, number>();
  let seedRnd = seed0;
  let totalAcked = 0;
  try {
    for (let round = 0; round < rounds; round++) {
      seedRnd = (seedRnd * 1103515245 + 12345) % 2 ** 31;
      const killAfter = 5 + (seedRnd % 120);
      const run = await runAndKill(WRITER, [dir, String(round * 1_000_000 + 1), String(seedRnd), barrier], `${dir}.statements`, killAfter);
      const issues = (ls: string[]) => ls.filter((l) => l.startsWith("issue ")).length;
      const logged = issues(run.statements);
      const atExit = logged - issues(run.stdoutAtExit);
      const atClose = logged - issues(run.stdoutAtClose);
      if (atExit > 0) (missing.exitRounds++, (missing.exitIssues += atExit));
      if (atClose > 0) (missing.closeRounds++, (missing.closeIssues += atClose));
      const lines = source === "exit" ? run.stdoutAtExit : source === "close" ? run.stdoutAtClose : run.statements;
      // Statements the checked source lacks (only the log is complete).
      const seen = new Set(lines);
      const lateLines = run.statements.filter((l) => !seen.has(l));
      const lateIds = lateLines.filter((l) => l.startsWith("issue ")).map((l) => Number(l.split(" ")[1]));
      for (const line of lines) {
        const [kind, a, b] = line.split(" ");
        if (kind === "issue") {
          const id = Number(a);
          lbaOf.set(id, Number(b));
          const h = history.get(Number(b)) ?? { ids: [], acked: -1 };
          h.ids.push(id);
          history.set(Number(b), h);
        } else if (kind === "ack") {
          for (const id of a!.split(",").map(Number)) {
            const h = history.get(lbaOf.get(id)!)!;
            h.acked = Math.max(h.acked, h.ids.indexOf(id));
            totalAcked++;
          }
        }
      }
      const before = `${dir}-before`;
      await rm(before, { recursive: true, force: true });
      await cp(dir, before, { recursive: true });
      const vol = await SmartWalVolume.open(dir, { extentBarrier: barrier });
      const problems: unknown[] = [];
      try {
        if (vol.recovery.damaged.length > 0) problems.push({ damaged: vol.recovery.damaged });
        for (const [lba, h] of history) {
          const got = Buffer.from(await vol.read(lba));
          const allowed = h.ids.slice(Math.max(0, h.acked));
          const ok = allowed.some((id) => got.equals(blockFor(id))) || (h.acked < 0 && got.every((x) => x === 0));
          if (ok) continue;
          const gotId = h.ids.find((id) => got.equals(blockFor(id))) ?? lateIds.find((id) => got.equals(blockFor(id)));
          const gotLateIssuedId = lateIds.includes(gotId ?? -1);
          const extent = await readFile(join(before, VolumeFiles.extent));
          const files = (await describeFiles(before, lba)) as { records: { phys: number }[] };
          const blocks = await Promise.all(files.records.map((r) => whoseBlock(extent, r.phys, h.ids)));
          problems.push({ lba, ackedId: h.ids[h.acked], issuedIds: h.ids, gotId, gotLateIssuedId, lateLines, files, blockHolds: blocks });
        }
        if (problems.length === 0) continue;
        await mkdir(outDir, { recursive: true });
        const keep = join(outDir, `${barrier}-seed${seed0}-round${round}`);
        await cp(before, keep, { recursive: true });
        const failure = { barrier, seed: seed0, round, writerSeed: seedRnd, killAfter, problems, report: vol.recovery, writerLines: lines };
        await writeFile(join(keep, "failure.json"), JSON.stringify(failure, null, 1));
        return { acked: totalAcked, failure: { ...failure, writerLines: lines.length, kept: keep } };
      } finally {
        await vol.close();
      }
    }
    return { acked: totalAcked };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(`${dir}-before`, { recursive: true, force: true });
    await rm(`${dir}.statements`, { force: true });
  }
}

let acked = 0;
const failures: unknown[] = [];
for (let s = firstSeed; s < firstSeed + seeds; s++) {
  const r = await runSeed(s);
  acked += r.acked;
  if (r.failure) failures.push(r.failure);
  console.log(`${barrier} seed ${s}: ${r.failure ? "FAIL " + JSON.stringify(r.failure) : "ok"} (acked ${r.acked}; so far stdout lacked logged issues: at exit ${missing.exitRounds} rounds/${missing.exitIssues} issues, at close ${missing.closeRounds}/${missing.closeIssues})`);
}
console.log(JSON.stringify({ barrier, firstSeed, seeds, rounds, source, ackedChecked: acked, failures: failures.length, missingFromStdout: missing }));
