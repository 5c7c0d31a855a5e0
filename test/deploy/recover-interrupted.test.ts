/**
 * `custody recover` that cannot go wrong (issue #47), on a real `custody init` deployment and real
 * processes: the key file `custody init` wrote (`data.key`, 32 raw bytes) is taken as it is; the
 * block count and the destination come from the deployment when `--blocks` and `--to` are left out;
 * a site the deployment does not have is refused, naming the sites it has. A recovery SIGKILLed
 * while it builds leaves only its `.partial` files (mode 0600, no header: nothing mounts them); one
 * SIGTERMed there ends with one `error [interrupted]: …` line and leaves nothing; the same command
 * run again completes byte-exact against the writer's acknowledgement log.
 *
 * "While it builds" is made certain, not hoped for: the holder the recovery reads from is
 * SIGSTOPped before the recovery starts, so each run stages its volume (its space claimed before
 * the holders are read) and then waits on that holder's answer until the test signals it.
 */
import test from "ava";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { custodyCli, custodyStdout as custody, type CustodyCliFailure } from "../kit/custody-cli.ts";
import { until, untilValue } from "../kit/until.ts";
import { readVolume, tempDir } from "../e2e/e2e-fixture.ts";
import { lsnOffset, readVolumeAckLog, workloadContentThrough } from "../../tools/demo/workload.ts";
import { deployedNetwork } from "./deployed-network.ts";
import { custodyCommand, DeployedProcess, loopbackDeployment } from "../kit/index.ts";
import { SmartWalVolume, VolumeFiles } from "../../volume/index.ts";

/** Generous bounds: they only end a hung run, they measure nothing. */
const SETTLE_MS = 90_000;
const WRITES = 40;
/** The loopback deployment's volume size (its `blockCount`). */
const BLOCKS = 256;
const lastJson = (out: string) => JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, any>;
/** The names a volume's files have once it is one. */
const VOLUME_NAMES: readonly string[] = [VolumeFiles.header, VolumeFiles.data, VolumeFiles.extent, VolumeFiles.wal, ...VolumeFiles.checkpoints];

test("recover refuses a site the deployment does not have, naming the ones it has, before it connects or creates anything; a key file of neither form is refused naming both", async (t) => {
  const dir = tempDir("custody-recover-site-");
  writeFileSync(join(dir, "deployment.json"), JSON.stringify(await loopbackDeployment(dir, { baseBuilder: false })));
  const out = join(dir, "out");
  await custody(["init", join(dir, "deployment.json"), "--out", out]);
  const key = join(out, "roles", "writer-w1", "data.key");
  const dest = join(dir, "recovered", "vol-d");
  // No server runs: anything that tried to connect would fail differently (no_server).
  const asOperator = ["--operator-config", join(out, "operator", "nats.json"), "--connect-timeout", "200", "--log-wait", "200"];

  const mars = (await custodyCli(["recover", "--volume", "vol-d", "--to", "s-mars", "--dir", dest, "--key-file", key, ...asOperator]).catch((e: CustodyCliFailure) => e)) as CustodyCliFailure;
  t.is(mars.code, 1);
  t.is(mars.stderr, `error [unknown_site]: --to s-mars: vol-d has no such site (its sites: s-w, s-vault, s-e1, s-w1; from ${join(out, "roles", "controller-ctl-1", "config.json")})\n`);
  t.false(existsSync(dest), "nothing was created");

  const hexish = join(dir, "short.key");
  writeFileSync(hexish, "00112233445566778899aabbccddeeff");
  const bad = (await custodyCli(["recover", "--volume", "vol-d", "--dir", dest, "--key-file", hexish, ...asOperator]).catch((e: CustodyCliFailure) => e)) as CustodyCliFailure;
  t.is(bad.code, 1);
  t.regex(bad.stderr, /^error \[invalid_key_file\]: .*short\.key: it holds 32 hex digits .*32 bytes as they are \(what custody init writes as data\.key\) or as 64 hex digits\n$/);
  t.false(existsSync(dest));
});

test("a recovery SIGKILLed and one SIGTERMed while they build leave no file that looks like a volume (the SIGKILLed one's partial files are 0600); run again, with init's data.key as it is and no --blocks or --to, it completes byte-exact", async (t) => {
  const { out, index, roles, start, asOperator, explain } = await deployedNetwork(t, "custody-recover-int-", { baseBuilder: false });
  const ackLog = join(tempDir("custody-recover-int-acks-"), "acks.jsonl");
  const writerConfig = index.roles.find((r) => r.role === "writer")!.config;
  const w = JSON.parse(readFileSync(writerConfig, "utf8")) as { workload: Record<string, unknown> };
  writeFileSync(writerConfig, JSON.stringify({ ...w, workload: { ...w.workload, count: WRITES, ackLog } }));
  await custody(["bootstrap", join(out, "bootstrap.json"), "--json"]);
  await start("controller-ctl-1");
  for (const r of index.roles.filter((x) => x.role === "holder" || x.role === "writer")) await start(r.instance);

  const acks = await untilValue("the workload's writes acknowledged", SETTLE_MS, async () => {
    const a = readVolumeAckLog(ackLog, "vol-d");
    return a.length === WRITES ? a : undefined;
  }, explain);
  const lastSeq = Math.max(...acks.map((a) => a.seq));
  const lastLsn = Math.max(...acks.map((a) => a.lsn));
  // The scenario the recovery reads: the RAM holder's host lost, so the disk holder h-w1 alone keeps the cut.
  const scenario = "crash:h-e1";
  await untilValue(`the controller's ${scenario} cut keeps every acknowledged write, from h-w1`, SETTLE_MS, async () => {
    const doc = lastJson(await custody(["status", "vol-d", ...asOperator, "--json"]));
    const sc = (doc.scenarios as { name: string; cut: [string, number][] | null; contributors: string[] }[]).find((s) => s.name === scenario);
    return sc !== undefined && (sc.cut?.find(([l]) => l === "l0")?.[1] ?? 0) >= lastSeq && sc.contributors.join() === "h-w1" ? true : undefined;
  }, explain);

  // h-w1 stops answering: every recovery below stages its volume, then waits for h-w1's units.
  const hw1 = roles.get("holder-h-w1")!;
  process.kill(hw1.pid, "SIGSTOP");
  t.teardown(() => {
    if (hw1.running) process.kill(hw1.pid, "SIGCONT");
  });
  const parent = tempDir("custody-recover-int-dest-");
  const dir = join(parent, "vol-d");
  const key = join(out, "roles", "writer-w1", "data.key");
  t.is(statSync(key).size, 32, "custody init's data.key: the key's 32 bytes as they are");
  const args = ["recover", "--volume", "vol-d", "--scenario", scenario, "--dir", dir, "--key-file", key, ...asOperator, "--timeout", "600000", "--json"];
  const recovery = (name: string) => {
    const c = custodyCommand(args);
    const p = new DeployedProcess(name, c.command, c.args);
    t.teardown(async () => {
      if (p.running) await p.signal("SIGKILL", 10_000);
    });
    return p;
  };
  // Staged by this process: its lock names it, and the partial header is newer than the lock (not an earlier run's leftover).
  const stagedBy = (p: DeployedProcess) => {
    try {
      const lock = join(dir, ".recover.lock");
      return readFileSync(lock, "utf8").trim() === String(p.pid) && statSync(join(dir, `${VolumeFiles.header}.partial`)).mtimeMs >= statSync(lock).mtimeMs;
    } catch {
      return false;
    }
  };
  const staged = (p: DeployedProcess) => until(`${p.name} staged its volume`, SETTLE_MS, () => stagedBy(p) || !p.running, () => `${p.log}\n${explain()}`);
  /** Every file under the destination's parent that is named like a volume's file, and whether the directory mounts. */
  const volumeLooking = async () => {
    const named = existsSync(dir) ? readdirSync(dir).filter((f) => VOLUME_NAMES.includes(f)) : [];
    const mounts = await SmartWalVolume.open(dir).then(
      async (v) => {
        await v.close();
        return true;
      },
      () => false,
    );
    return { named, mounts, beside: readdirSync(parent).filter((f) => f !== "vol-d") };
  };

  // SIGKILL while it builds: only the partial files (0600) and the stale lock are left.
  const killed = recovery("recover-sigkill");
  await staged(killed);
  t.true(killed.running, `it was still running when it was killed: ${killed.log}`);
  t.is((await killed.signal("SIGKILL", SETTLE_MS)).signal, "SIGKILL");
  t.deepEqual(await volumeLooking(), { named: [], mounts: false, beside: [] }, "nothing looks like a volume");
  const partials = readdirSync(dir).filter((f) => f.endsWith(".partial")).sort();
  t.deepEqual(partials, ["checkpoint.0.partial", "checkpoint.1.partial", "volume.dat.partial", "volume.hdr.partial"]);
  for (const f of partials) t.is(statSync(join(dir, f)).mode & 0o777, 0o600, `${f} is 0600`);
  t.log(`after SIGKILL: ${readdirSync(dir).map((f) => `${f} ${(statSync(join(dir, f)).mode & 0o777).toString(8)} ${statSync(join(dir, f)).size}`).join(", ")}`);

  // SIGTERM while it builds (over the SIGKILLed one's leftovers): one error line, exit 1, nothing left.
  const termed = recovery("recover-sigterm");
  await staged(termed);
  t.true(termed.running, `it was still running when it was stopped: ${termed.log}`);
  const ended = await termed.signal("SIGTERM", SETTLE_MS);
  t.deepEqual({ code: ended.code, signal: ended.signal, inTime: ended.inTime }, { code: 1, signal: null, inTime: true }, termed.log);
  t.regex(termed.stderr, /^error \[interrupted\]: SIGTERM received: custody recover of vol-d stopped; its partial files were removed and nothing at \S+ is a volume; run the same command again to start over\n$/);
  t.is(termed.stdout, "");
  t.deepEqual(await volumeLooking(), { named: [], mounts: false, beside: [] });
  t.deepEqual(existsSync(dir) ? readdirSync(dir) : [], [], "no partial file and no lock left");

  // Run again with h-w1 answering: it completes, from the deployment's block count and recovery site.
  process.kill(hw1.pid, "SIGCONT");
  const again = recovery("recover-again");
  const done = await again.ended;
  t.is(done.code, 0, again.log);
  const r = lastJson(again.stdout);
  t.like(r, { destination: "s-vault", destinationFrom: "recovery site", blockCount: BLOCKS, blocksFrom: "deployment", fetchErrors: {} });
  t.deepEqual(r.recovered, r.predicted);
  t.true((r.lsn as number) >= lastLsn, `recovered through lsn ${String(r.lsn)}, the last acknowledged is ${lastLsn}`);
  t.is(again.stderr, "", "stderr is not a terminal: no progress bar, nothing else");
  const got = await readVolume(dir, BLOCKS);
  t.true(Buffer.from(got).equals(Buffer.from(workloadContentThrough(BLOCKS, 1, lsnOffset(acks, 1), r.lsn as number))), "byte-exact against the acknowledgement log");
  const files = readdirSync(dir).sort();
  t.deepEqual(files, ["checkpoint.0", "checkpoint.1", "volume.dat", "volume.hdr"]);
  for (const f of files) t.is(statSync(join(dir, f)).mode & 0o777, 0o600, `${f} is 0600`);
  t.log(`recover after the interruptions: ${String(r.elapsedMs)} ms, lsn ${String(r.lsn)}, ${String(r.unitsVerified)} units (${String(r.unitBytes)} bytes)`);
});
