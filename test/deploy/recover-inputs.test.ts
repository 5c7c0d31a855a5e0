/**
 * The parts of `custody recover` that decide before anything is read (issue #47): the two forms of
 * a data key file, where a recovery goes and how large it is, and the progress bar that is drawn
 * only on a terminal.
 */
import test from "ava";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { readDataKeyFile } from "../../actors/runtime/data-key-file.ts";
import { recoveryTarget } from "../../cli/recovery-target.ts";
import { progressBar, progressLine } from "../../cli/progress-bar.ts";
import { withCliIo } from "../../cli/cli-io.ts";
import { topologyFor } from "../e2e/deployment.ts";

const dir = mkdtempSync(join(tmpdir(), "recover-inputs-"));
const file = (name: string, bytes: Uint8Array | string) => {
  const p = join(dir, name);
  writeFileSync(p, bytes);
  return p;
};

test("a data key file is read as custody init writes it (32 raw bytes) or as 64 hex digits with a newline; anything else, and 32 hex digits, is refused naming the file", (t) => {
  const key = new Uint8Array(randomBytes(32));
  key[0] = 0xff; // not a hex digit: a raw key is never taken for text
  t.deepEqual(readDataKeyFile(file("raw.key", key)), key);
  t.deepEqual(readDataKeyFile(file("hex.key", Buffer.from(key).toString("hex") + "\n")), key);
  t.deepEqual(readDataKeyFile(file("hex-nonl.key", Buffer.from(key).toString("hex").toUpperCase())), key);
  const refused = (name: string, bytes: Uint8Array | string) => t.throws(() => readDataKeyFile(file(name, bytes)), { message: new RegExp(`^${join(dir, name).replace(/[.]/g, "\\.")}: `) }) as unknown as { code: string; message: string };
  t.is(refused("half.key", "00112233445566778899aabbccddeeff").code, "invalid_key_file");
  t.regex(refused("half2.key", "00112233445566778899aabbccddeeff").message, /32 hex digits/);
  t.regex(refused("short.key", key.subarray(0, 31)).message, /holds 31 bytes/);
  t.regex(refused("long.key", new Uint8Array(64)).message, /holds 64 bytes/);
  t.regex(refused("hex-spaces.key", `${Buffer.from(key).toString("hex")}\n\n`).message, /holds 66 bytes/);
  t.regex(t.throws(() => readDataKeyFile(join(dir, "missing.key")))!.message, /missing\.key: cannot read it \(ENOENT\)/);
});

test("a recovery goes to --to when it is one of the volume's sites, else to the scenario's own destination, else to the recovery site; its size is --blocks, else the deployment's", (t) => {
  const topology = { ...topologyFor("vol-x"), blockCount: 4096 };
  t.deepEqual(recoveryTarget(topology, "ctl.json", {}), { site: "s-eu", siteFrom: "recovery site", blockCount: 4096, blocksFrom: "deployment" });
  t.deepEqual(recoveryTarget(topology, "ctl.json", { scenario: "AZ use1-az1 lost" }), { site: "s-usw", siteFrom: "scenario", blockCount: 4096, blocksFrom: "deployment" });
  t.deepEqual(recoveryTarget(topology, "ctl.json", { scenario: "US-East lost", to: "s-nj", blocks: 64 }), { site: "s-nj", siteFrom: "option", blockCount: 64, blocksFrom: "option" });
  const mars = t.throws(() => recoveryTarget(topology, "ctl.json", { to: "s-mars" })) as unknown as { code: string; message: string };
  t.is(mars.code, "unknown_site");
  t.is(mars.message, "--to s-mars: vol-x has no such site (its sites: s-w, s-e1, s-e2, s-e3, s-nj, s-usw, s-eu; from ctl.json)");
  const { blockCount: _, ...older } = topology;
  t.is((t.throws(() => recoveryTarget(older, "old.json", {})) as unknown as { code: string }).code, "block_count_unknown");
  t.is(recoveryTarget(older, "old.json", { blocks: 8 }).blockCount, 8);
});

test("a progress line shows the bar, units, bytes, rate and time left; the bar is drawn in place on a terminal only", async (t) => {
  t.is(progressLine({ label: "apply", done: 1500, total: 3000, unit: "records", bytes: 6 << 20, elapsedMs: 2000 }), "apply [##########----------] 1,500/3,000 records  6.0 MiB  3.0 MiB/s  ETA 2s");
  t.is(progressLine({ label: "fetch h-w1/l0", done: 0, total: 40, unit: "seqs", bytes: 0, elapsedMs: 0, extra: "0 units" }), "fetch h-w1/l0 [--------------------] 0/40 seqs  0 units  0 B  -  ETA ?");
  t.is(progressLine({ label: "allocate", done: 1 << 30, total: 1 << 30, unit: "bytes", bytes: 1 << 30, elapsedMs: 180_000 }), "allocate [####################] 1.0 GiB/1.0 GiB  1.0 GiB  5.7 MiB/s  done");
  t.is(progressLine({ label: "verify", done: 1, total: 7201, unit: "blocks", bytes: 4096, elapsedMs: 1000 }), "verify [--------------------] 1/7,201 blocks  4.0 KiB  4.0 KiB/s  ETA 2h00m");

  const drawn = async (terminal: boolean) => {
    let err = "";
    let clock = 0;
    await withCliIo({ stdout: () => undefined, stderr: (s) => void (err += s), setExitCode: () => undefined, stderrIsTerminal: () => terminal }, async () => {
      const bar = progressBar(() => clock);
      bar.show({ label: "apply", done: 1, total: 4, unit: "records", bytes: 4096 });
      clock = 50; // sooner than a redraw: skipped
      bar.show({ label: "apply", done: 2, total: 4, unit: "records", bytes: 8192 });
      clock = 1000;
      bar.show({ label: "apply", done: 4, total: 4, unit: "records", bytes: 16384 });
      bar.clear();
    });
    return err;
  };
  const frames = (await drawn(true)).split("\r").filter((f) => f.length > 0);
  t.deepEqual(frames, ["apply [#####---------------] 1/4 records  4.0 KiB  -  ETA ?\x1b[K", "apply [####################] 4/4 records  16.0 KiB  16.0 KiB/s  done\x1b[K", "\x1b[K"]);
  t.is(await drawn(false), "", "not a terminal: nothing at all");
});
