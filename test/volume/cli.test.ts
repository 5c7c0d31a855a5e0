import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { runCliCaptured } from "../../cli/program.ts";

/** One `custody volume …` command line, run in this process: exit status and what it printed. */
const custody = async (...args: string[]) => {
  const r = await runCliCaptured(["volume", ...args]);
  return { status: r.code, stdout: r.stdout, stderr: r.stderr };
};
const lastJson = (out: string) => JSON.parse(out.trim().split("\n").pop()!);

test("custody volume create/write/read/recover/inspect speak one-line JSON, and a bad LBA is one typed error line with exit 1", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "cli-vol-"));
  try {
    const v = join(dir, "v");
    t.is(lastJson((await custody("create", v, "--blocks", "32", "--json")).stdout).blockCount, 32);
    const w = lastJson((await custody("write", v, "--lba", "4", "--fill", "9", "--blocks", "2", "--json")).stdout);
    t.deepEqual(w, { lba: 4, blocks: 2, lsn: 2, durableLsn: 2 });
    const r = lastJson((await custody("read", v, "--lba", "4", "--count", "3", "--json")).stdout);
    t.deepEqual(r.blocks.map((b: { zero: boolean }) => b.zero), [false, false, true]);
    t.is(r.blocks[0].head, "09".repeat(16));
    const rec = lastJson((await custody("recover", v, "--json")).stdout);
    t.is(rec.lastLsn, 2);
    t.deepEqual(rec.damaged, []);
    const ins = lastJson((await custody("inspect", v, "--json")).stdout);
    t.is(ins.ring.validRecords, 2);
    t.is(ins.entriesPer64MiB, 1048576);
    const bad = await custody("read", v, "--lba", "40");
    t.is(bad.status, 1);
    t.regex(bad.stderr, /^error \[volume_bad_request\]: .*\n$/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
