/**
 * docs/deploy.md keeps its promises (issue #45). Its example deployment (§1, parsed from the page)
 * passes its own required scenarios' control-plane check, and §10's recovery chapter works: for
 * every region of the example, a loopback copy of it (loopback addresses, free ports, blockCount
 * 256, a writer workload that logs its acknowledgements: nothing else changed) is started from
 * `custody init`'s files, writes until every write is acknowledged and every required region
 * scenario keeps them all, then every process of the region (its two nats-servers and its roles)
 * is SIGKILLed, and the commands of that region's block in §10 run exactly as written (under bash,
 * `custody` being this checkout's CLI, `deploy-out` the test's init output). The recovery succeeds
 * and the volume is byte-exact against the writer's acknowledgement log. `CHAPTER_ONLY=<region>`
 * runs one region's part alone.
 */
import test from "ava";
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { controlPlaneLosses, parseDeployment } from "../../policies/deploy/index.ts";
import { custodyCommand, DEPLOYMENT_READY_MS, DeployedProcess, freePort, initAndStartNatsOf } from "../kit/index.ts";
import { lsnOffset, readVolumeAckLog, workloadContentThrough } from "../../tools/demo/workload.ts";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { readVolume, tempDir } from "../e2e/e2e-fixture.ts";

const run = promisify(execFile);
/** Generous bounds: they only end a hung run, they measure nothing. */
const SETTLE_MS = 120_000;
const WRITES = 60;
/** The loopback copy's volume size, standing for the example's 262144 blocks (recover reads it from the deployment). */
const BLOCKS = 256;
const PAGE = readFileSync(new URL("../../docs/deploy.md", import.meta.url), "utf8");

/** §1's example deployment, as printed. */
function exampleDeployment(): Record<string, any> {
  const section = PAGE.slice(PAGE.indexOf("## 1. Describe the deployment"));
  return JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]!) as Record<string, any>;
}

/** §10's command blocks, by region. */
function chapterBlocks(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of PAGE.matchAll(/<!-- recovery-chapter: (\S+) -->\n```\n([\s\S]*?)```/g)) out.set(m[1]!, m[2]!.trim().split("\n"));
  return out;
}

/** The example on loopback: free ports, local addresses and folders, a small volume, acknowledgements logged. */
async function loopbackExample(dir: string, ackLog: string): Promise<Record<string, unknown>> {
  const d = exampleDeployment();
  delete d["paths"];
  const ports = async () => ({ port: await freePort(), httpPort: await freePort(), clusterPort: await freePort(), gatewayPort: await freePort() });
  for (const [name, r] of Object.entries(d["regions"] as Record<string, any>)) {
    Object.assign(r, { host: "127.0.0.1", listen: "127.0.0.1", ...(await ports()), jetstreamDir: join(dir, "js", name) });
    if (r.controlServer !== undefined) r.controlServer = { ...(await ports()), jetstreamDir: join(dir, "js", `${name}-control`) };
  }
  const metrics = async (x: { metrics?: unknown }) => {
    if (x.metrics !== undefined) x.metrics = { port: await freePort(), host: "127.0.0.1" };
  };
  for (const h of d["holders"]) await metrics(h);
  for (const c of d["controllers"]) await metrics(c);
  for (const b of d["baseBuilders"] ?? []) await metrics(b);
  for (const v of d["volumes"]) {
    v.blockCount = BLOCKS;
    await metrics(v.writer);
    v.writer.workload = { ...v.writer.workload, count: WRITES, ackLog };
  }
  return d;
}

test("the example in docs/deploy.md keeps its control plane in every required scenario (custody init accepts it as printed)", (t) => {
  const d = parseDeployment(exampleDeployment());
  t.deepEqual(controlPlaneLosses(d), []);
  t.deepEqual(d.controllers.map((c) => `${c.id}@${c.region}`), ["ctl-east@us-east", "ctl-eu@eu"]);
  t.deepEqual([...chapterBlocks().keys()], Object.keys(d.regions), "§10 has a block for every region of the example");
});

test("§10 of docs/deploy.md, run as written after each region of the example is SIGKILLed: the volume is recovered byte-exact against the acknowledgement log", async (t) => {
  const began = Date.now();
  const blocks = chapterBlocks();
  const figures: string[] = [];
  for (const region of Object.keys(exampleDeployment()["regions"] as object).filter((r) => process.env["CHAPTER_ONLY"] === undefined || r === process.env["CHAPTER_ONLY"])) {
    const regionBegan = Date.now();
    const processes: DeployedProcess[] = [];
    t.teardown(async () => {
      for (const p of processes) if (p.running) await p.signal("SIGKILL", 10_000);
    });
    const work = tempDir(`custody-chapter-${region}-`);
    const ackLog = join(work, "acks.jsonl");
    const { out, index } = await initAndStartNatsOf(custody, () => tempDir("custody-chapter-deploy-"), (dir) => loopbackExample(dir, ackLog), (p) => processes.push(p));
    const asOperator = ["--operator-config", join(out, "operator", "nats.json")];
    const explain = () => processes.map((p) => `${p.name}: ${p.log.slice(-1_500)}`).join("\n");
    await custody(["bootstrap", join(out, "bootstrap.json"), "--json"]);
    // The controllers first (they admit the holders' new incarnations), then the holders, then the
    // writer and the base builder; the processes of one step start side by side.
    for (const step of [["controller"], ["holder"], ["writer", "base-builder"]]) {
      const starting = index.roles.filter((r) => step.includes(r.role)).map((r) => DeployedProcess.role(r.instance, r.role, r.config));
      processes.push(...starting);
      await Promise.all(starting.map((p) => p.ready(DEPLOYMENT_READY_MS)));
    }

    // Every write acknowledged, and both required region scenarios keep every one of them.
    const acks = await until("the workload's writes acknowledged", SETTLE_MS, async () => {
      const a = readVolumeAckLog(ackLog, "vol-1");
      return a.length === WRITES ? a : undefined;
    }, explain);
    const lastSeq = Math.max(...acks.map((a) => a.seq));
    const lastLsn = Math.max(...acks.map((a) => a.lsn));
    await until("the controller keeps every acknowledged write in every region's scenario", SETTLE_MS, async () => {
      const doc = JSON.parse((await custody(["status", "vol-1", ...asOperator, "--json"])).trim().split("\n").at(-1)!) as { scenarios: { name: string; cut: [string, number][] | null }[] };
      const keeps = (name: string) => (doc.scenarios.find((s) => s.name === name)?.cut?.find(([l]) => l === "l0")?.[1] ?? -1) >= lastSeq;
      return keeps("us-east lost") && keeps("us-west lost") && keeps("eu lost") ? true : undefined;
    }, explain);

    // The whole region goes: its region server, its control server, every role connected to it.
    const victims = processes.filter((p) => p.name === `nats-${region}` || p.name === `nats-control-ctl-${region}` || index.roles.some((r) => r.region === region && r.instance === p.name));
    t.true(victims.length >= 3, `${region}: ${victims.map((p) => p.name).join(", ")}`);
    for (const p of victims) t.is((await p.signal("SIGKILL", SETTLE_MS)).signal, "SIGKILL");
    const killedAt = Date.now();

    // §10's block for the region, exactly as printed, at a surviving site.
    const site = join(work, "site");
    mkdirSync(join(site, "bin"), { recursive: true });
    symlinkSync(out, join(site, "deploy-out"));
    const cli = custodyCommand([]);
    writeFileSync(join(site, "bin", "custody"), `#!/bin/sh\nexec ${[cli.command, ...cli.args].map((a) => `'${a}'`).join(" ")} "$@"\n`);
    chmodSync(join(site, "bin", "custody"), 0o755);
    // Each command's stdout by its first two words (`custody status`, `custody recover`).
    const outputs = new Map<string, string>();
    for (const line of blocks.get(region)!) {
      const r = await run("bash", ["-c", line], { cwd: site, env: { ...process.env, PATH: `${join(site, "bin")}:${process.env["PATH"]}` }, maxBuffer: 16 << 20 }).catch((err: { code: number; stdout: string; stderr: string }) => t.fail(`${region}: \`${line}\` exited ${err.code}: ${err.stderr}\n${explain()}`));
      if (r === undefined || typeof r === "boolean") return;
      outputs.set(line.split(" ").slice(0, 2).join(" "), r.stdout);
    }
    const status = outputs.get("custody status")!;
    t.log(`${region} status:\n${status}`);
    t.regex(status, /us-east lost/, `${region}: status prints the scenarios`);
    const recovered = JSON.parse(outputs.get("custody recover")!.trim().split("\n").at(-1)!) as Record<string, any>;
    // The page gives no --blocks: the size is the (loopback copy's) deployment's.
    t.like(recovered, { blockCount: BLOCKS, blocksFrom: "deployment", destination: region === "eu" ? "s-west" : "s-eu" }, region);
    t.deepEqual(recovered["recovered"], recovered["predicted"], region);
    t.deepEqual(recovered["fetchErrors"], {}, region);
    t.true((recovered["lsn"] as number) >= lastLsn, `${region}: recovered through lsn ${String(recovered["lsn"])}, the last acknowledged is ${lastLsn}`);
    const got = await readVolume(join(site, "recovered", "vol-1"), BLOCKS);
    t.true(Buffer.from(got).equals(Buffer.from(workloadContentThrough(BLOCKS, 1, lsnOffset(acks, 1), recovered["lsn"] as number))), `${region}: byte-exact against the acknowledgement log`);
    figures.push(`${region}: recover ${String(recovered["elapsedMs"])} ms (${Date.now() - killedAt} ms of commands after the SIGKILL; receipts from ${JSON.stringify(recovered["holdersHeard"])}, fetched ${JSON.stringify(recovered["fetched"])}); region run ${Date.now() - regionBegan} ms`);
    t.log(figures.at(-1)!);
    t.log(`${region} recover: ${outputs.get("custody recover")!.trim()}`);
    for (const p of processes) if (p.running) await p.signal("SIGKILL", 10_000);
  }
  t.log(`test ran ${Date.now() - began} ms`);
});
