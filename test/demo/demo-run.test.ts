/**
 * Runs the real demo once in short mode (`node --import tsx tools/demo/run-demo.ts --short --json`:
 * real nats-servers per region, every actor in its own process, a sustained write stream on two
 * volumes struck mid-stream by real SIGKILLs) and checks what the issues promise: at least one
 * volume loses acknowledged writes, every recovered cut equals the controller's prediction from
 * the survivors' receipts, the waypoint's volume loses less than the one without it, the recovered
 * volumes are what the writer wrote, no process is left behind, `custody trace` rebuilds a unit's
 * tree with cross-region hops, and report.html renders in headless Chromium with the lost ranges.
 */
import anyTest, { type TestFn } from "ava";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadDeployment } from "../../tools/demo/deployment.ts";
import { pidAlive } from "../../tools/demo/process-registry.ts";
import { readRunSpans, type TraceNode, type TraceTree } from "../../actors/runtime/telemetry/trace-tree.ts";
import type { UnitFate } from "../../actors/runtime/telemetry/unit-fate.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { custodyCommand } from "../kit/custody-command.ts";
import { scriptCommand } from "../kit/script-command.ts";

/** `custody <args>` as run() takes it. */
const custodyLine = (args: string[]): [string, string[]] => {
  const c = custodyCommand(args);
  return [c.command, c.args];
};

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

interface ScenarioJson {
  name: string;
  volume: string;
  path: string;
  acknowledged: number;
  predicted_cut: number | null;
  recovered_cut: number;
  recovered_lsn: number;
  lost_seqs: number;
  predicted_lost_seqs: number;
  byte_exact: boolean;
}

interface DemoJson {
  scenarios: ScenarioJson[];
  losing_scenarios: number;
  mismatches: number;
  waypoint_loss: { with_waypoint: number; without_waypoint: number } | null;
  byte_exact: boolean;
  seconds: number;
  runDir: string;
  startedPids: number[];
  leftPids: number[];
  report: string;
}

interface Ctx {
  stdout: string;
  exitCode: number | null;
  result: DemoJson;
  root: string;
}
const test = anyTest as TestFn<Ctx>;

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const t = setTimeout(() => {
      child.kill("SIGINT"); // the demo's own handler stops everything it started
      rej(new Error(`${args.join(" ")} did not finish within ${timeoutMs} ms\n${stdout.slice(-3000)}\n${stderr.slice(-3000)}`));
    }, timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(t);
      res({ stdout, stderr, code });
    });
  });
}

test.before(async (t) => {
  t.timeout(300_000);
  const root = mkdtempSync(join(tmpdir(), "custody-demo-test-"));
  const demo = scriptCommand(join(repo, "tools", "demo", "run-demo.ts"), ["--short", "--json", "--runs", root]);
  const out = await run(demo.command, demo.args, 280_000);
  const last = out.stdout.trim().split("\n").pop() ?? "";
  let result: DemoJson;
  try {
    result = JSON.parse(last) as DemoJson;
  } catch {
    throw new Error(`demo printed no JSON result (exit ${out.code}):\n${out.stdout.slice(-4000)}\n${out.stderr.slice(-4000)}`);
  }
  t.context.stdout = out.stdout;
  t.context.exitCode = out.code;
  t.context.result = result;
  t.context.root = root;
});

test.after.always((t) => {
  if (t.context.root !== undefined) rmSync(t.context.root, { recursive: true, force: true });
});

test.serial("the strike loses acknowledged writes and every volume's recovered cut equals the prediction from the survivors' receipts", (t) => {
  const { stdout, result, exitCode } = t.context;
  t.is(exitCode, 0, stdout.slice(-3000));
  t.deepEqual(result.scenarios.map((s) => s.volume), ["vol-demo", "vol-direct"]);
  t.true(result.losing_scenarios >= 1, "at least one volume lost acknowledged writes");
  t.is(result.mismatches, 0);
  for (const s of result.scenarios) {
    t.not(s.predicted_cut, null, s.name);
    t.is(s.recovered_cut, s.predicted_cut!, `${s.name}: recovered cut equals the prediction`);
    t.is(s.lost_seqs, Math.max(0, s.acknowledged - s.recovered_cut), s.name);
    t.is(s.lost_seqs, s.predicted_lost_seqs, s.name);
    t.true(s.byte_exact, `${s.name}: the recovered volume holds exactly the writes through its cut`);
  }
  t.regex(stdout, /predicted cut\s+recovered cut\s+predicted loss\s+observed loss\s+match/);
  t.regex(stdout, /scenario\s+req\s+predicted cut\s+recovered cut\s+lost range/);
});

test.serial("the waypoint's worth: the same strike loses less on the volume whose custody goes through the waypoint", (t) => {
  const { result } = t.context;
  t.truthy(result.waypoint_loss);
  const withWp = result.scenarios.find((s) => s.volume === "vol-demo")!;
  const direct = result.scenarios.find((s) => s.volume === "vol-direct")!;
  t.is(result.waypoint_loss!.with_waypoint, withWp.lost_seqs);
  t.is(result.waypoint_loss!.without_waypoint, direct.lost_seqs);
  t.true(withWp.lost_seqs < direct.lost_seqs, `with the waypoint ${withWp.lost_seqs} lost, without ${direct.lost_seqs}`);
  // Europe is a first hop of vol-direct: it loses what was in flight, never everything (a holder
  // several volumes share once stayed unadmitted after its restart, and vol-direct lost all).
  t.true(direct.recovered_cut > 0, `vol-direct recovered through #${direct.recovered_cut} of #${direct.acknowledged}`);
});

test.serial("a recovered volume equals the writer's own volume exactly when the writer had nothing durable past the recovered LSN", async (t) => {
  const { result } = t.context;
  const blocks = loadDeployment(join(repo, "examples", "deployment.json")).blocks;
  for (const s of result.scenarios) {
    const writer = await SmartWalVolume.open(join(result.runDir, "writer", s.volume));
    let writerBytes: Buffer;
    let durable: number;
    try {
      writerBytes = Buffer.from(await writer.read(0, blocks));
      durable = writer.walWindow().durable;
    } finally {
      await writer.close();
    }
    const rec = await SmartWalVolume.open(join(result.runDir, "recovered", s.volume));
    let recovered: Buffer;
    try {
      recovered = Buffer.from(await rec.read(0, blocks));
    } finally {
      await rec.close();
    }
    t.true(recovered.some((b) => b !== 0), `${s.volume}: the recovery wrote data`);
    t.true(durable >= s.recovered_lsn, `${s.volume}: the writer had made durable at least what was recovered`);
    t.is(recovered.equals(writerBytes), durable === s.recovered_lsn, `${s.volume}: writer durable LSN ${durable}, recovered LSN ${s.recovered_lsn}`);
  }
});

test.serial("no process the demo started is left running", (t) => {
  const { result } = t.context;
  t.true(result.startedPids.length >= 4 + 7, "4 nats-servers and 7 actor processes were started");
  t.deepEqual(result.leftPids, []);
  t.deepEqual(result.startedPids.filter(pidAlive), []);
});

function find(n: TraceNode, pred: (x: TraceNode) => boolean): TraceNode[] {
  return [...(pred(n) ? [n] : []), ...n.children.flatMap((c) => find(c, pred))];
}

test.serial("custody trace rebuilds a unit's tree from the processes' spans: a child span per hop, cross-region hops, receipts", async (t) => {
  const { result } = t.context;
  // A unit the waypoint forwarded to Europe well before the strike. Europe trails the writer behind
  // its slow ocean leg, and by more than a fixed share of the run once the writer got faster (the
  // unit at a quarter of the recovered cut, ~126 of ~500, had no Europe admit when Europe had only
  // reached ~100), so take the median of the units Europe's own spans show it admitted.
  const euAdmitted = readRunSpans(result.runDir)
    .filter((s) => s.name === "holder.admit" && s.resource["custody.actor"] === "h-eu" && s.attributes["custody.volume"] === "vol-demo")
    .map((s) => s.attributes["custody.first_seq"])
    .filter((f): f is number => typeof f === "number")
    .sort((a, b) => a - b);
  t.true(euAdmitted.length > 0, "Europe admitted some of vol-demo's units");
  const seq = euAdmitted[Math.floor(euAdmitted.length / 2)]!;
  const out = await run(...custodyLine(["trace", `vol-demo:${seq}`, "--run", result.runDir, "--json"]), 60_000);
  t.is(out.code, 0, out.stderr);
  const tree = JSON.parse(out.stdout.trim().split("\n").pop()!) as TraceTree;
  const root = tree.roots.find((r) => r.name === "writer.write");
  t.truthy(root, "the write is the root");
  const sends = root!.children.filter((c) => c.name === "link.send");
  // One hop per first-hop holder; a holder whose receipt was late gets the unit again (a re-send is
  // a second hop to the same holder), so count destinations, and each one admitted it under a hop.
  const holderOf = (s: (typeof sends)[number]) => /\(([^)]+)\)/.exec(s.detail)?.[1] ?? s.detail; // "s-w -> s-e1 (h-e1)"
  const byHolder = new Map<string, typeof sends>();
  for (const s of sends) byHolder.set(holderOf(s), [...(byHolder.get(holderOf(s)) ?? []), s]);
  t.deepEqual([...byHolder.keys()].sort(), ["h-e1", "h-e2", "h-usw", "h-wp"], "one hop per first-hop holder");
  for (const [h, hops] of byHolder) t.true(hops.some((s) => s.children.some((c) => c.name === "holder.admit")), `${h}: the admit hangs under its hop`);
  if (sends.length > byHolder.size) t.log(`${sends.length - byHolder.size} re-send(s) of vol-demo:${seq}`);
  t.true(tree.crossRegionHops >= 1);
  // The waypoint forwards: admit -> forward -> link.send (cross-region) -> admit at Europe.
  const euAdmit = find(root!, (n) => n.name === "holder.admit" && n.actor === "h-eu");
  t.is(euAdmit.length, 1);
  const wpForward = find(root!, (n) => n.name === "holder.forward" && n.actor === "h-wp")[0]!;
  t.is(wpForward.children[0]?.name, "link.send");
  t.true(wpForward.children[0]!.crossRegion === true);
  t.is(wpForward.children[0]!.children[0]?.spanId, euAdmit[0]!.spanId);
  t.true((euAdmit[0]!.hopLatencyMs ?? -1) >= 0);
  const receipts = find(root!, (n) => n.name === "holder.receipt");
  t.true(receipts.length >= 1);
  // A receipt id leads back to the same unit's trace.
  const id = /receipt id ([0-9a-f]{16})/.exec(receipts[0]!.detail)![1]!;
  const again = await run(...custodyLine(["trace", id, "--run", result.runDir, "--json"]), 60_000);
  t.is(again.code, 0, again.stderr);
  t.true((JSON.parse(again.stdout.trim().split("\n").pop()!) as TraceTree).roots.some((r) => r.name === "writer.write"));
});

test.serial("custody trace of a write the strike lost names the last hop its unit reached and the strike that ended it, and every admit its range", async (t) => {
  const { result } = t.context;
  const direct = result.scenarios.find((s) => s.volume === "vol-direct")!;
  t.true(direct.lost_seqs > 0, "vol-direct lost acknowledged writes");
  // The first acknowledged write no survivor had (the recovered cut is the survivors' prefix).
  const seq = direct.recovered_cut + 1;
  const out = await run(...custodyLine(["trace", `vol-direct:${seq}`, "--run", result.runDir, "--json"]), 60_000);
  t.is(out.code, 0, out.stderr);
  const tree = JSON.parse(out.stdout.trim().split("\n").pop()!) as TraceTree & { fate: UnitFate };
  const { fate } = tree;
  t.is(fate.verdict, "lost_in_strike", fate.lines.join("\n"));
  t.deepEqual([...fate.strike!.regions].sort(), ["us-east", "us-west"]);
  t.true(fate.strike!.killed.includes("w1-vol-direct"), "the strike killed the writer");
  t.true(fate.strike!.killed.includes(fate.lastHop!.holder), `the last hop ${fate.lastHop!.holder} was struck`);
  t.deepEqual(fate.survivors, []);
  const eu = fate.holders.find((h) => h.holder === "h-eu");
  t.truthy(eu, "the path names Europe, the survivor it never reached");
  t.is(eu!.admittedAtMs, undefined);
  const admits = tree.roots.flatMap((r) => find(r, (n) => n.name === "holder.admit"));
  t.true(admits.length > 0);
  for (const a of admits) {
    t.regex(a.detail, /^seq \d+\.\.\d+/, `${a.actor}: ${a.detail}`);
    t.true(["stored", "duplicate", "replayed", "refused"].includes(a.outcome ?? ""), `${a.actor}: the holder named what became of the unit (${a.outcome})`);
  }
  const text = await run(...custodyLine(["trace", `vol-direct:${seq}`, "--run", result.runDir]), 60_000);
  t.regex(text.stdout, /^fate: LOST in the strike at \+\d+ ms \(SIGKILL of us-east, us-west: .*w1-vol-direct.*\)/m);
  t.regex(text.stdout, new RegExp(`^last hop: ${fate.lastHop!.holder} \\(s-[a-z0-9]+\\) admitted it at \\+\\d+ ms$`, "m"));
  t.notRegex(text.stdout, /undefined/);
});

/** Chromium's path; installs Debian's package when missing (CI runs as root) or fails saying how to. */
function chromium(): string {
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser"]) if (existsSync(p)) return p;
  try {
    execFileSync("apt-get", ["install", "-y", "chromium"], { stdio: "ignore", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }, timeout: 240_000 });
  } catch (err) {
    throw new Error(`headless Chromium is needed for the report test and could not be installed (run 'apt-get install -y chromium' as root): ${(err as Error).message}`);
  }
  if (!existsSync("/usr/bin/chromium")) throw new Error("apt-get install chromium did not provide /usr/bin/chromium");
  return "/usr/bin/chromium";
}

test.serial("report.html renders in headless Chromium with the strike, the surviving cut and every lost range drawn, and predicted vs observed loss per volume", async (t) => {
  t.timeout(280_000);
  const { result } = t.context;
  const bin = chromium();
  const profile = mkdtempSync(join(tmpdir(), "custody-chromium-"));
  const png = join(profile, "report.png");
  const flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", `--user-data-dir=${profile}`];
  try {
    const url = `file://${result.report}`;
    const dom = await run(bin, [...flags, "--dump-dom", url], 120_000);
    t.is(dom.code, 0, dom.stderr.slice(-2000));
    const html = dom.stdout;
    t.regex(html, /<svg id="custody-graph"/);
    for (const site of ["s-w", "s-e1", "s-e2", "s-wp", "s-usw", "s-eu"]) t.true(html.includes(`data-site="${site}"`), `graph shows site ${site}`);
    t.true((html.match(/class="edge"/g) ?? []).length >= 5, "graph shows the custody legs");
    t.regex(html, /<svg id="timeline"/);
    t.true((html.match(/class="band"/g) ?? []).length >= 5, "one retained-range band per holder");
    t.regex(html, /class="cut"/, "the cut that would survive the strike, over time");
    t.regex(html, /<line class="strike"/, "the strike is marked");
    t.regex(html, /<line class="surviving-cut"/, "the surviving cut is marked");
    const losing = result.scenarios.filter((s) => s.lost_seqs > 0);
    for (const s of losing) t.regex(html, new RegExp(`<rect class="lost-range" data-volume="${s.volume}" data-range="${s.recovered_cut + 1}–${s.acknowledged}"`), `${s.volume}'s lost range is drawn`);
    // The page's own script measured the lost-range shapes as laid out by Chromium: all have a size.
    const shown = Number(/data-lost-shown="(\d+)"/.exec(html)?.[1] ?? -1);
    t.is(shown, (html.match(/class="lost-range"/g) ?? []).length);
    t.true(shown >= losing.length);
    t.regex(html, /<table id="cost-table">[\s\S]*s-wp → s-eu[\s\S]*total/);
    t.regex(html, /<table id="scenario-table">[\s\S]*predicted loss[\s\S]*observed loss[\s\S]*exact/);
    t.notRegex(html, /MISMATCH/);
    t.regex(html, /<table id="status-table">/);
    t.regex(html, /data-rendered="yes"/, "the inline script ran");
    t.regex(html, /2 volumes struck, [1-2] lost acknowledged writes, 0 differ from the prediction/);
    const shot = await run(bin, [...flags, `--screenshot=${png}`, "--window-size=1000,1700", url], 120_000);
    t.is(shot.code, 0, shot.stderr.slice(-2000));
    const bytes = readFileSync(png);
    t.true(bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), "a PNG screenshot");
    t.true(bytes.length > 20_000, "the screenshot has content");
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
});
