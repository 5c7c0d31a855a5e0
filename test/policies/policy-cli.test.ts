import test from "ava";
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { runCliCaptured } from "../../cli/program.ts";
import { CANDIDATES_PATH, EXAMPLE_PATH, exampleJson } from "./worked-example-fixture.ts";

const run = promisify(execFile);
const BIN = fileURLToPath(new URL("../../cli/custody.js", import.meta.url));

/** Runs one `custody` command line in this process (the same program the binary runs). */
const custody = (...args: string[]) => runCliCaptured(args);

/** Runs one command line through the real executable, in its own process. */
async function custodyBinary(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [BIN, ...args], { timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const dir = mkdtempSync(join(tmpdir(), "custody-policy-cli-"));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

test("custody evaluate prints a table with one row per scenario of the example", async (t) => {
  const r = await custody("evaluate", EXAMPLE_PATH);
  t.is(r.code, 3, "the example's required scenarios lose acknowledged writes and allow none: not met");
  const lines = r.stdout.trimEnd().split("\n");
  t.regex(lines[0]!, /^volume vol-orders {2}acknowledged l0:120/);
  t.regex(lines[1]!, /^scenario\s+kind\s+cut\s+lost/);
  const row = lines.find((l) => l.startsWith("US-East and US-West lost"))!;
  t.regex(row, /l0:118\s+l0:119-120\s+8\.0 MiB\s+3\.0s\s+euw1-store/);
  t.regex(row, /writable_activation_blocked/);
  t.regex(row, /NOT MET: loses 2 acknowledged writes, 0 allowed; writable activation blocked/);
  t.regex(lines.find((l) => l.startsWith("writer host crash"))!, /\smet$/);
  t.is(lines.length, 3 + 7);
  t.regex(r.stderr, /^contract not met: US-East lost \(loses 1 acknowledged write, 0 allowed\), US-East and US-West lost/);
});

test("custody evaluate exits 0 when every required scenario is met: losses within what each allows, activation possible", async (t) => {
  const j = exampleJson();
  for (const sc of j.scenarios) if (sc.name === "US-East lost" || sc.name === "US-East and US-West lost") sc.allowedLoss = { seqs: 2, ageSec: 60 };
  j.metadataQuorum.quorum = 1;
  const file = join(dir, "met.json");
  writeFileSync(file, JSON.stringify(j));
  const r = await custody("evaluate", file, "--json");
  t.is(r.code, 0, r.stderr);
  const last = JSON.parse(r.stdout.trimEnd().split("\n").at(-1)!) as { reports: { name: string; required: boolean; verdict: string; reasons: string[] }[] };
  t.deepEqual(last.reports.filter((x) => x.required).map((x) => x.verdict), last.reports.filter((x) => x.required).map(() => "met"));
  // A tighter allowance on bytes turns the same loss into a verdict with its reason.
  for (const sc of j.scenarios) if (sc.name === "US-East lost") sc.allowedLoss = { seqs: 2, bytes: 1024 };
  writeFileSync(file, JSON.stringify(j));
  const tight = await custody("evaluate", file, "--json");
  t.is(tight.code, 3);
  const eastLost = (JSON.parse(tight.stdout.trimEnd().split("\n").at(-1)!) as typeof last).reports.find((x) => x.name === "US-East lost")!;
  t.is(eastLost.verdict, "not_met");
  t.deepEqual(eastLost.reasons, ["loses 4194304 bytes, 1024 allowed"]);
});

test("custody evaluate names each contributor's retention-audit state, and an unproven holder's claims count for nothing", async (t) => {
  const j = exampleJson();
  for (const h of j.holders) if (h.id === "europe") h.audit = "passed";
  for (const h of j.holders) if (h.id === "waypoint") h.audit = "failed";
  const file = join(dir, "audits.json");
  writeFileSync(file, JSON.stringify(j));
  const r = await custody("evaluate", file);
  const lines = r.stdout.trimEnd().split("\n");
  t.is(lines[1], "unproven (failed retention audit, claims not counted): waypoint");
  // Without the waypoint's 116-118 the two-region loss falls back to Europe's 115.
  const row = lines.find((l) => l.startsWith("US-East and US-West lost"))!;
  t.regex(row, /l0:115\s+l0:116-120/);
  t.regex(row, /\seurope:passed\s/);
  t.notRegex(row, /waypoint/);
  const json = JSON.parse((await custody("evaluate", file, "--json")).stdout.trimEnd().split("\n").at(-1)!) as { holderAudits: Record<string, string> };
  t.deepEqual(json.holderAudits, { europe: "passed", waypoint: "failed" });
  j.holders[0].audit = "lost";
  writeFileSync(file, JSON.stringify(j));
  const bad = await custody("evaluate", file);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /holders\[0\]\.audit/);
});

test("custody evaluate refuses a misspelled key, naming its path, and evidence from the future", async (t) => {
  const j = exampleJson();
  j.holders[1].claims[0].residncy = "ram";
  const file = join(dir, "typo.json");
  writeFileSync(file, JSON.stringify(j));
  const r = await custody("evaluate", file);
  t.is(r.code, 1);
  t.is(r.stdout, "");
  t.regex(r.stderr, /^error \[invalid_policy_input\]: holders\[1\]\.claims\[0\].*residncy/);
  const f = exampleJson();
  f.holders[2].claims[0].evidence.atMs = f.asOfMs + 5_000;
  writeFileSync(file, JSON.stringify(f));
  const future = await custody("evaluate", file);
  t.is(future.code, 1);
  t.regex(future.stderr, /^error \[invalid_policy_input\]: holders\[2\]\.claims\[0\]\.evidence\.atMs: evidence from the future/);
});

test("custody evaluate --json prints one JSON object on the last line", async (t) => {
  const r = await custody("evaluate", EXAMPLE_PATH, "--json");
  t.is(r.code, 3, "not met, as in the table");
  const last = JSON.parse(r.stdout.trimEnd().split("\n").at(-1)!);
  t.is(last.volume, "vol-orders");
  t.deepEqual(last.reports.find((x: { name: string }) => x.name === "US-East and US-West lost").cut, { l0: 118 });
});

test("custody evaluate on bad input prints one error line naming the field and exits 1", async (t) => {
  const j = exampleJson();
  j.holders[3].claims[0].ranges = [[118, 112]];
  const file = join(dir, "bad.json");
  writeFileSync(file, JSON.stringify(j));
  const r = await custody("evaluate", file);
  t.is(r.code, 1);
  t.is(r.stdout, "");
  const lines = r.stderr.trimEnd().split("\n");
  t.is(lines.length, 1);
  t.regex(lines[0]!, /^error \[invalid_policy_input\]: holders\[3\]\.claims\[0\]\.ranges\[0\]: /);
});

test("custody evaluate on a missing file fails with one line", async (t) => {
  const r = await custody("evaluate", join(dir, "nope.json"));
  t.is(r.code, 1);
  t.regex(r.stderr, /^error \[invalid_policy_input\]: .*nope\.json: cannot read file \(ENOENT\)\n$/);
});

test("custody place prints the chosen graph and the best of each shape; --json has the chosen holders", async (t) => {
  const r = await custody("place", CANDIDATES_PATH);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^chosen\s+waypoint\s+3\s+source->waypoint waypoint->europe europe->europe-b\s+13864\s+1\.5ms\s+met$/m);
  t.regex(r.stdout, /^best parallel\s+parallel/m);
  t.regex(r.stdout, /shared-path dependencies of the chosen graph/);
  const j = await custody("place", CANDIDATES_PATH, "--json");
  const last = JSON.parse(j.stdout.trimEnd().split("\n").at(-1)!);
  t.deepEqual(last.chosen.holders, ["europe", "europe-b", "waypoint"]);
});

test("custody release check decides releases jointly with reasons and blocking scenarios; exit 3 when one is refused", async (t) => {
  const r = await custody("release", "check", EXAMPLE_PATH, "waypoint:l0:116-118", "ram-same-az:l0:110-120", "--json");
  t.is(r.code, 3);
  const { decisions } = JSON.parse(r.stdout.trim()) as { decisions: { holder: string; allowed: boolean; reasons: string[]; scenarios: string[] }[] };
  t.deepEqual(decisions.map((d) => [d.holder, d.allowed]), [["waypoint", false], ["ram-same-az", true]]);
  t.deepEqual(decisions[0]!.reasons, ["scenario_below_cut"]);
  t.deepEqual(decisions[0]!.scenarios, ["US-East and US-West lost"], "the memo: West's receipt 119 does not let the waypoint drop 116-118");
  const ok = await custody("release", "check", EXAMPLE_PATH, "ram-same-az:l0:110-120");
  t.is(ok.code, 0, ok.stderr);
  t.regex(ok.stdout, /^1 of 1 allowed/);
  const bad = await custody("release", "check", EXAMPLE_PATH, "nobody:l0:1-2");
  t.is(bad.code, 1);
  t.regex(bad.stderr, /^error \[unknown_policy_reference\]: releases\[0\]\.holder/);
  const malformed = await custody("release", "check", EXAMPLE_PATH, "waypoint:l0:9-3");
  t.is(malformed.code, 1);
  t.regex(malformed.stderr, /^error \[invalid_policy_input\]: releases\[0\]: bad range "9-3"/);
});

test("custody size and custody cost give the memo's arithmetic; a bad amount or edge is one error line naming it", async (t) => {
  const size = await custody("size", "--bytes-per-sec", String(2 ** 30), "--retention-sec", "5", "--outage-sec", "1", "--json");
  t.is(size.code, 0, size.stderr);
  const m = JSON.parse(size.stdout.trim()) as { steadyBytes: number; outageBacklogBytes: number; totalBytes: number };
  t.is(m.steadyBytes, 5 * 2 ** 30, "1 GiB/s retained for 5 s");
  t.is(m.outageBacklogBytes, 2 ** 30, "a 1 s forwarding outage piles up 1 GiB");
  t.is(m.totalBytes, 6 * 2 ** 30);
  const edges = join(dir, "edges.json");
  writeFileSync(edges, JSON.stringify([{ from: "use1", to: "euw1", charges: [{ name: "inter-region", usdPerGB: 0.02 }, { name: "tgw", usdPerGB: 0.02 }] }]));
  const cost = await custody("cost", edges, "--bytes-per-sec", "1000000000", "--json");
  t.is(cost.code, 0, cost.stderr);
  const c = JSON.parse(cost.stdout.trim()) as { legs: { usd: number }[]; totalUsd: number };
  t.deepEqual(c.legs.map((l) => Math.round(l.usd)), [51_840, 51_840], "1 GB/s at $0.02/GB for 30 days, per leg");
  t.is(Math.round(c.totalUsd), 103_680);
  const neg = await custody("size", "--bytes-per-sec", "-3", "--retention-sec", "5");
  t.is(neg.code, 1);
  t.regex(neg.stderr, /^error \[invalid_policy_input\]: bytes-per-sec: must be a number >= 0/);
  writeFileSync(edges, JSON.stringify([{ from: "a", to: "b", charges: [{ name: "x", usdPerGb: 0.02 }] }]));
  const typo = await custody("cost", edges, "--bytes-per-sec", "1");
  t.is(typo.code, 1);
  t.regex(typo.stderr, /^error \[invalid_policy_input\]: \[0\]\.charges\[0\]: .*usdPerG/);
});

test("custody admit judges protected-RAM nodes under simultaneous drains: exit 3 when one is refused; a shared target without capacity or a misspelled key is one error line naming it", async (t) => {
  const GB = 1e9;
  const node = (id: string, queuedGB: number, over: Record<string, unknown> = {}) => ({
    id,
    queuedProtectedBytes: queuedGB * GB,
    reservedDrainBytesPerSec: 1 * GB,
    detectionSec: 0.1,
    persistenceCompletionSec: 0.05,
    marginSec: 0.1,
    usableHoldUpSec: 3,
    drainTarget: "nvme-1",
    controller: `ctl-${id}`,
    link: `link-${id}`,
    powerSupply: `psu-${id}`,
    ...over,
  });
  const file = join(dir, "protected-ram.json");
  // Alone, a's 2 GB drain in 2 s (2.25 s with detection, persistence and margin) inside 3 s of hold-up;
  // with b on the same 1 GB/s target both drain 4 GB together: 4.25 s, refused. c drains elsewhere.
  writeFileSync(file, JSON.stringify({ nodes: [node("a", 2), node("b", 2), node("c", 1, { drainTarget: "nvme-2" })], capacities: { targets: { "nvme-1": 1 * GB } } }));
  const r = await custody("admit", file, "--json");
  t.is(r.code, 3, r.stderr);
  const v = (JSON.parse(r.stdout.trim()) as { verdicts: { node: string; admitted: boolean; requiredSec: number; bottleneck: string }[] }).verdicts;
  t.deepEqual(v.map((x) => [x.node, x.admitted, Math.round(x.requiredSec * 100) / 100, x.bottleneck]), [
    ["a", false, 4.25, "target:nvme-1"],
    ["b", false, 4.25, "target:nvme-1"],
    ["c", true, 1.25, "own"],
  ]);
  const table = await custody("admit", file);
  t.regex(table.stdout, /^1 of 3 admitted/);
  t.regex(table.stdout, /\na\s+REFUSED\s+4\s+4\.25\s+3\s+-1\.25\s+target:nvme-1\s+b\n/);

  writeFileSync(file, JSON.stringify({ nodes: [node("a", 1), node("b", 1)] }));
  const noCap = await custody("admit", file);
  t.is(noCap.code, 1);
  t.regex(noCap.stderr, /^error \[invalid_policy_input\]: capacities\.targets\.nvme-1: is shared by 2 nodes and needs a capacity/);

  writeFileSync(file, JSON.stringify({ nodes: [{ ...node("a", 1), usableHoldupSec: 3 }] }));
  const typo = await custody("admit", file);
  t.is(typo.code, 1);
  t.regex(typo.stderr, /^error \[invalid_policy_input\]: nodes\[0\]: .*usableHoldupSec/);
});

test("the custody executable prints and exits exactly as the in-process run of the same command line", async (t) => {
  for (const args of [["evaluate", EXAMPLE_PATH, "--json"], ["size", "--rate", "nonsense"]]) {
    const inProcess = await custody(...args);
    const binary = await custodyBinary(...args);
    t.is(binary.code, inProcess.code, args.join(" "));
    t.is(binary.stdout, inProcess.stdout, args.join(" "));
    t.is(binary.stderr, inProcess.stderr, args.join(" "));
  }
});

test("custody evaluate names what makes a cut across lanes consistent: the manifest it is, or the base", async (t) => {
  const twoLanes = (withManifest: boolean) => {
    const j = exampleJson();
    j.source.lanes.l1 = 60;
    for (const b of j.bases) b.cut.l1 = 50;
    for (const h of j.holders) h.claims.push({ ...h.claims[0], lane: "l1", ranges: [[51, 60]] });
    j.commits.push({ lane: "l1", first: 51, last: 60, committedAtMs: j.asOfMs - 1000, bytesPerSeq: 1 });
    if (withManifest) j.manifests = [{ id: "m-118-58", cut: { l0: 118, l1: 58 }, holders: ["europe"] }];
    const path = join(dir, `two-lanes-${withManifest}.json`);
    writeFileSync(path, JSON.stringify(j));
    return path;
  };
  const row = async (path: string) => (await custody("evaluate", path)).stdout.split("\n").find((l) => l.startsWith("US-East and US-West lost"))!;
  t.regex(await row(twoLanes(true)), /l0:118 l1:58\s+.*manifest m-118-58/);
  t.regex(await row(twoLanes(false)), /l0:100 l1:50\s+.*base /);
  const json = JSON.parse((await custody("evaluate", "--json", twoLanes(true))).stdout.trimEnd().split("\n").pop()!);
  t.is(json.reports.find((x: { name: string }) => x.name === "US-East and US-West lost").manifest, "m-118-58");
});
