/**
 * The Prometheus files shipped in examples/prometheus/ pass Debian's promtool: the rule file and
 * the scrape config check clean, and the rules' promtool unit tests (fixture series in
 * custody-rules.test.yml) pass. Those unit tests can fail: against the same rules with every
 * `for:` cut to 0s they report the alerts that fire too early. Every alert is exercised by a unit
 * test and explained in docs/metrics.md under the anchor its `runbook_url` names.
 */
import test from "ava";
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promtoolBin, repoRoot } from "../kit/index.ts";
import { alertNames, PROMETHEUS_EXAMPLES, shippedRules, withFor } from "../kit/prometheus-rules.ts";

/** Runs promtool in `cwd`; resolves with its exit code and output (it never rejects on a non-zero exit). */
function promtool(args: readonly string[], cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    execFile(promtoolBin(), args, { cwd }, (err, stdout, stderr) => {
      if (err !== null && typeof err.code !== "number") return reject(new Error(`${promtoolBin()} could not run (tools/scripts/ensure-prometheus.sh installs it): ${err.message}`));
      resolve({ code: err === null ? 0 : (err.code as number), out: `${stdout}${stderr}` });
    });
  });
}

test("promtool check rules: the shipped rule file is valid, every rule counted", async (t) => {
  const rules = shippedRules();
  const count = [...rules.matchAll(/^\s*- (alert|record): /gm)].length;
  const r = await promtool(["check", "rules", "custody-rules.yml"], PROMETHEUS_EXAMPLES);
  t.is(r.code, 0, r.out);
  t.true(r.out.includes(`SUCCESS: ${count} rules found`), r.out);
  t.deepEqual(alertNames(rules), ["CustodyRequiredScenarioNotMet", "CustodyRoleDown", "CustodyVerdictsAbsent", "CustodyVolumeVerdictsMissing", "CustodyReceiptsLagging", "CustodyProtectionNotProven"]);
});

test("promtool check config: the example scrape config and the rule file it loads are valid", async (t) => {
  const r = await promtool(["check", "config", "prometheus.yml"], PROMETHEUS_EXAMPLES);
  t.is(r.code, 0, r.out);
  t.true(r.out.includes("SUCCESS: 1 rule files found"), r.out);
});

test("promtool test rules: the fixture series raise and resolve every alert as the unit tests expect", async (t) => {
  const r = await promtool(["test", "rules", "custody-rules.test.yml"], PROMETHEUS_EXAMPLES);
  t.is(r.code, 0, r.out);
  t.regex(r.out, /SUCCESS/);
  const cases = readFileSync(join(PROMETHEUS_EXAMPLES, "custody-rules.test.yml"), "utf8");
  const exercised = new Set([...cases.matchAll(/alertname: (\S+)/g)].map((m) => m[1]!));
  t.deepEqual(alertNames(shippedRules()).filter((a) => !exercised.has(a)), [], "every alert has a unit test");
});

test("the unit tests fail on rules whose alerts fire without waiting their for: duration", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-promtool-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "custody-rules.yml"), withFor(shippedRules(), "0s"));
  copyFileSync(join(PROMETHEUS_EXAMPLES, "custody-rules.test.yml"), join(dir, "custody-rules.test.yml"));
  const r = await promtool(["test", "rules", "custody-rules.test.yml"], dir);
  t.is(r.code, 1, r.out);
  t.regex(r.out, /FAILED/);
  for (const early of ["CustodyRequiredScenarioNotMet", "CustodyRoleDown", "CustodyVerdictsAbsent", "CustodyVolumeVerdictsMissing", "CustodyReceiptsLagging"]) t.true(r.out.includes(`alertname: ${early}`), `${early} fires early\n${r.out}`);
});

test("every alert is explained in docs/metrics.md under the anchor its runbook_url names", (t) => {
  const doc = readFileSync(join(repoRoot(), "docs", "metrics.md"), "utf8");
  const anchors = new Set([...doc.matchAll(/^#+ (.+)$/gm)].map((m) => m[1]!.toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-")));
  const rules = shippedRules();
  for (const name of alertNames(rules)) {
    const runbook = new RegExp(`- alert: ${name}\\n[\\s\\S]*?runbook_url: docs/metrics\\.md#(\\S+)`).exec(rules)?.[1];
    t.is(runbook, name.toLowerCase(), `${name} links its own section`);
    t.true(anchors.has(name.toLowerCase()), `docs/metrics.md has a heading ${name}`);
  }
});
