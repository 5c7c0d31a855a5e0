import test from "ava";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = new URL("../../cli/main.ts", import.meta.url).pathname;
const custody = (...args: string[]) => spawnSync(process.execPath, ["--import", "tsx", MAIN, "volume", ...args], { encoding: "utf8" });
const lastJson = (out: string) => JSON.parse(out.trim().split("\n").pop()!);

test("custody volume create/write/read/recover/inspect speak one-line JSON, and a bad LBA is one typed error line with exit 1", async (t) => {
  t.timeout(300_000); // child processes start slowly on a loaded machine
  const dir = await mkdtemp(join(tmpdir(), "cli-vol-"));
  try {
    const v = join(dir, "v");
    t.is(lastJson(custody("create", v, "--blocks", "32", "--json").stdout).blockCount, 32);
    const w = lastJson(custody("write", v, "--lba", "4", "--fill", "9", "--blocks", "2", "--json").stdout);
    t.deepEqual(w, { lba: 4, blocks: 2, lsn: 2, durableLsn: 2 });
    const r = lastJson(custody("read", v, "--lba", "4", "--count", "3", "--json").stdout);
    t.deepEqual(r.blocks.map((b: { zero: boolean }) => b.zero), [false, false, true]);
    t.is(r.blocks[0].head, "09".repeat(16));
    const rec = lastJson(custody("recover", v, "--json").stdout);
    t.is(rec.lastLsn, 2);
    t.deepEqual(rec.damaged, []);
    const ins = lastJson(custody("inspect", v, "--json").stdout);
    t.is(ins.ring.validRecords, 2);
    t.is(ins.entriesPer64MiB, 1048576);
    const bad = custody("read", v, "--lba", "40");
    t.is(bad.status, 1);
    t.regex(bad.stderr, /^error \[VOLUME_BAD_REQUEST\]: .*\n$/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
