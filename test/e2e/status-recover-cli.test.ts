import anyTest, { type TestFn } from "ava";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { serveCustodyReads } from "../../actors/repair/custody-reader.ts";
import { holderSource } from "../../actors/repair/survivor-source.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { blockData, contentAt, eventually, readVolume, tempDir } from "./e2e-fixture.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE, topologyFor } from "./deployment.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { custodyCli } from "../kit/custody-cli.ts";
import { gatherHolderEvidence } from "../../actors/repair/holder-evidence.ts";
import { evaluateFromLog } from "../../actors/controller/log-evaluation.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { systemClock } from "../../core/clock.ts";
import { custodyCommand } from "../kit/custody-command.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });

const cli = custodyCli;
const lastJson = (out: string) => JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, unknown>;

test.serial("custody status prints the controller's document and custody recover rebuilds the predicted cut byte-exact from the scenario's survivors", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-cli", "use-cli");
  t.context.defer(() => d.stop());
  for (const h of d.holders.values()) {
    const sub = serveCustodyReads(h.transport, holderSource(h.holder));
    t.context.defer(() => sub.unsubscribe());
  }
  // 300 × 4 KiB: more than one NATS message (1 MiB) of units per holder, so fetches must page.
  for (let i = 0; i < 300; i++) await d.writer.write((i * 13) % BLOCKS, blockData(500 + i));
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  await eventually(() => (d.controller.status()?.acknowledged[0]?.[1] ?? 0) >= head, "controller evaluated the writes", 5000);
  const writes = [...d.writer.writes];

  const url = d.urls["eu"]!;
  const status = lastJson((await cli(["status", d.volume, "--server", url, "--json"])).stdout);
  t.is(status.volume, d.volume);
  const scenarios = status.scenarios as { name: string; cut: [string, number][] | null; contributors: string[] }[];
  t.is(scenarios.length, 4);
  const table = (await cli(["status", d.volume, "--server", url])).stdout;
  t.regex(table, /US-East and US-West lost/);
  t.regex(table, /verdict/);

  // --watch keeps printing documents as the controller publishes them, until Ctrl-C (exit 0).
  const watchCommand = custodyCommand(["status", d.volume, "--server", url, "--watch", "--every", "100", "--json"]);
  const watch = spawn(watchCommand.command, watchCommand.args, { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
  let watched = "";
  watch.stdout.on("data", (b: Buffer) => (watched += b.toString()));
  await eventually(() => watched.split("\n").filter((l) => l.startsWith("{")).length >= 3, "three documents while watching", 60_000);
  const watchExit = new Promise<number | null>((r) => watch.once("exit", (code) => r(code)));
  watch.kill("SIGINT");
  t.is(await watchExit, 0);
  for (const line of watched.trim().split("\n")) t.is((JSON.parse(line) as { volume: string }).volume, d.volume);
  // Nobody reads any more (`custody status --watch | head -2`): the watch ends by itself, quietly, exit 0.
  const unreadCommand = custodyCommand(["status", d.volume, "--server", url, "--watch", "--every", "100", "--json"]);
  const unread = spawn(unreadCommand.command, unreadCommand.args, { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
  unread.stdout.destroy();
  let unreadErr = "";
  unread.stderr.on("data", (b: Buffer) => (unreadErr += b.toString()));
  const killer = setTimeout(() => unread.kill("SIGKILL"), 60_000);
  const unreadExit = await new Promise<number | null>((r) => unread.once("exit", (code) => r(code)));
  clearTimeout(killer);
  t.is(unreadExit, 0, `a watch nobody reads ends by itself: ${unreadErr}`);
  t.is(unreadErr, "");

  // Recover the "US-East lost" scenario at Europe from its contributors only.
  d.authority.authorize(d.volume, "cli-recovery");
  const keyFile = join(tempDir(), "data.key");
  writeFileSync(keyFile, Buffer.from(d.authority.dataKey(d.volume, "cli-recovery")).toString("hex"));
  const dir = join(tempDir("custody-cli-recover-"), "vol");
  const out = lastJson((await cli(["recover", "--volume", d.volume, "--scenario", "US-East lost", "--to", "s-eu", "--dir", dir, "--blocks", String(BLOCKS), "--key-file", keyFile, "--controller-config", d.controllerConfigFile, "--server", url, "--region", "use-cli", "--json"])).stdout);
  t.deepEqual(out.recovered, out.predicted);
  // With --region the read was registered in the control log before the first fetch, and ended after it.
  const log = await (await openJetStreamControlLog(d.writer.transport.connection, { region: "use-cli" })).readAll();
  const holds = log.map((e) => e.event).filter((e) => e.type === "hold_ranges" || e.type === "end_hold");
  t.deepEqual(holds.map((e) => e.type), ["hold_ranges", "end_hold"]);
  const placed = holds[0]!;
  if (placed.type === "hold_ranges") {
    t.is(placed.kind, "recovery");
    t.is(placed.ranges.toString(), `1-${(out.predicted as Record<string, number>)[LANE]}`);
    t.deepEqual([...placed.holders].sort(), [...scenarios.find((s) => s.name === "US-East lost")!.contributors].sort());
  }
  const got = await readVolume(dir, BLOCKS);
  t.true(Buffer.from(got).equals(Buffer.from(contentAt(writes, BLOCKS, out.lsn as number))), "byte-exact at the recovered cut");

  t.deepEqual(out.fetchErrors, {}, "every contributor served its units");

  // A contributor that cannot be reached is reported by name, never read as "it had nothing".
  const contributors = scenarios.find((s) => s.name === "US-East lost")!.contributors;
  const gone = contributors.find((c) => d.holders.has(c))!;
  await d.kill(gone);
  const again = await cli(["recover", "--volume", d.volume, "--scenario", "US-East lost", "--to", "s-eu", "--dir", dir + "-again", "--blocks", String(BLOCKS), "--key-file", keyFile, "--controller-config", d.controllerConfigFile, "--server", url, "--timeout", "1000", "--json"]).catch((e: { stdout: string; stderr: string; code: number }) => e);
  t.regex(again.stderr, new RegExp(`fetch from ${gone} \\(lane ${LANE}\\) failed: fetch_failed`));
  if ((again as { code?: number }).code === 1) t.regex(again.stderr, /recovery_short/, "short of the prediction: a typed error");
  else t.deepEqual(Object.keys(lastJson(again.stdout).fetchErrors as object), [gone], "the others covered it; the failure is still in the result");

  const bad = await cli(["recover", "--volume", d.volume, "--scenario", "no such", "--to", "s-eu", "--dir", dir + "2", "--blocks", "64", "--key-file", keyFile, "--controller-config", d.controllerConfigFile, "--server", url]).catch((e: { stderr: string; code: number }) => e);
  t.is((bad as { code: number }).code, 1);
  t.regex((bad as { stderr: string }).stderr, /scenario_unavailable/);
});

test.serial("without its controller, the evaluation from the control log and the holders' verified receipts names the cuts the controller's own document names", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-nocl", "use-nocl");
  t.context.defer(() => d.stop());
  for (let i = 0; i < 60; i++) await d.writer.write((i * 7) % BLOCKS, blockData(900 + i));
  const head = (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
  await eventually(() => (d.controller.status()?.survivingCut?.[0]?.[1] ?? 0) >= head, "the controller's surviving cut reaches the head", 10_000);
  const doc = d.controller.status()!;

  // What `custody status` and `custody recover` do when no controller answers: the log, the receipts, the controller's evaluation.
  const follower = new ControlLogFollower(await openJetStreamControlLog(d.writer.transport.connection, { region: "use-nocl" }));
  const control = await follower.refresh();
  const topology = { ...topologyFor(d.volume), releasable: ["h-e1", "h-e2"] };
  const expect = Object.keys(topology.holderSites).filter((h) => control.holders[h] !== undefined);
  const ev = await gatherHolderEvidence(d.writer.transport, control, { volume: d.volume, lanes: topology.lanes, expect, waitMs: 3_000, staleAfterMs: topology.staleAfterMs, clock: systemClock });
  // (A holder whose copies were all released sends no receipt: it is not waited for past the bound, and adds nothing to a cut.)
  t.true(ev.heard.length > 0 && ev.heard.every((h) => expect.includes(h)), JSON.stringify(ev.heard));
  t.deepEqual(ev.rejected, {});
  const { report } = evaluateFromLog(topology, control, ev.holdings, ev.progress, systemClock.now());
  const cuts = (names: { name: string; cut: unknown }[]) => Object.fromEntries(names.map((r) => [r.name, r.cut === null ? null : Object.fromEntries(Array.isArray(r.cut) ? r.cut : Object.entries(r.cut as object))]));
  t.deepEqual(cuts(report.reports), cuts(doc.scenarios), "the same cut for every scenario and timeline");
});
