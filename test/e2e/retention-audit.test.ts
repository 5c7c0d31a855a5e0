/**
 * Retention audits on a real multi-region deployment (supercluster, JetStream control log): the
 * US-West holder keeps receipting everything but has dropped the payload bytes (test-only fault
 * `faults.dropRetained`); the controller's challenges catch it within the configured number of
 * audits, the honest holders pass, the status document shows both, and evaluation stops counting
 * the cheating holder's receipts.
 */
import anyTest, { type TestFn } from "ava";
import type { RetentionAuditConfig } from "../../actors/controller/controller-config.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { evaluateState } from "../../policies/index.ts";
import { withSupercluster, type SuperclusterTestContext } from "../kit/index.ts";
import { setupTracing, type TracingHandle } from "../../actors/runtime/telemetry/tracing.ts";
import { AZ_CONTRACT, BLOCKS, deploy, LANE, type Deployment } from "./deployment.ts";
import { blockData, eventually } from "./e2e-fixture.ts";

const test = anyTest as TestFn<SuperclusterTestContext & { tracing: TracingHandle }>;
withSupercluster(test, { regions: ["us-east", "us-west", "eu"] });
test.before((t) => {
  t.context.tracing = setupTracing({ serviceName: "retention-audit-test", exporter: "memory" });
});
test.after.always(async (t) => {
  await t.context.tracing?.shutdown();
});

const AUDIT: RetentionAuditConfig = { everyMs: 200, unitsPerChallenge: 4, answerTimeoutMs: 5_000, maxBytesPerPeriod: 64 * 1024 * 1024, periodMs: 60_000 };
/** Every challenge asks for payload bytes the cheater no longer has: its first judged audit (and every later one) fails. */
const CAUGHT_WITHIN_AUDITS = 1;
/** Only the US-West holder survives this (optional) scenario: it shows whether its receipts count. */
const ONLY_WEST = {
  name: "US-East, NJ and EU lost",
  losses: [
    { domain: "region:us-east", kind: "site_destruction" as const },
    { domain: "region:us-nj", kind: "site_destruction" as const },
    { domain: "region:eu", kind: "site_destruction" as const },
  ],
  deadlineSec: 1800,
  required: false,
};

async function writeSome(d: Deployment, n: number, seed: number): Promise<number> {
  for (let i = 0; i < n; i++) await d.writer.write((seed * 31 + i * 7) % BLOCKS, blockData(seed * 1000 + i));
  return (await d.writer.writer.sync(AZ_CONTRACT.name, 10_000)).heads[LANE]!;
}

test.serial("a holder that drops retained data but keeps receipting is caught by the first audit and unproven in evaluation and status; honest holders pass; coverage repair never copies to it", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-audit", "use-vol-audit", {
    holderFaults: { "h-w": { dropRetained: true } },
    controller: { retentionAudit: AUDIT },
    // Optional scenarios are repaired too: ONLY_WEST's gap has one possible home, the cheater.
    coverageRepair: { optional: true, graceMs: 200, retryMs: 500 },
    topology: (topo) => ({ ...topo, scenarios: [...topo.scenarios, ONLY_WEST] }),
  });
  t.context.defer(() => d.stop());
  const audits = { rows: () => d.controller.auditRows() };
  const row = (h: string) => audits.rows().find((r) => r.holder === h)!;
  const head = await writeSome(d, 60, 1);

  await eventually(() => row("h-w").state === "failed", "the cheating holder fails an audit", 30_000, () => JSON.stringify(audits.rows()));
  // Audits ran while the workload was written: every judged one so far failed, so the first caught it.
  const caught = row("h-w");
  t.is(caught.passed, 0);
  t.true(caught.failed >= CAUGHT_WITHIN_AUDITS);
  t.is(caught.timedOut, 0, "it answered, wrongly (it still knows every unit's header)");
  t.true(d.controller.counters.get("audit_failed") >= 1);

  for (const h of ["h-nj", "h-eu"]) await eventually(() => row(h).passed >= 2, `${h} passes audits`, 30_000, () => JSON.stringify(audits.rows()));
  await writeSome(d, 20, 2);
  await eventually(() => row("h-w").failed >= 3, "the cheater keeps failing later audits", 30_000, () => JSON.stringify(row("h-w")));
  t.is(row("h-w").passed, 0);
  // No honest holder was ever judged wrong or late (the RAM tiers' releases void audits, never fail them).
  for (const h of ["h-e1", "h-e2", "h-nj", "h-eu"]) t.deepEqual([row(h).failed, row(h).timedOut], [0, 0], h);

  // The cheater's receipts still claim everything, but evaluation leaves them out.
  const ledgerWest = d.controller.holdings({ volume: d.volume, holderId: "h-w" }).reduce((r, h) => r.union(h.retained), RangeSet.EMPTY);
  t.true(ledgerWest.coversAll(RangeSet.of(1, head)), `h-w still receipts ${ledgerWest}`);
  const state = d.controller.evaluationState();
  t.deepEqual(state.holders.find((h) => h.id === "h-w")!.claims, []);
  t.true(state.holders.find((h) => h.id === "h-eu")!.claims.length > 0);
  const onlyWest = evaluateState(state).reports.find((r) => r.name === ONLY_WEST.name)!;
  t.true((onlyWest.cut?.[LANE] ?? 0) < head, `with only US-West left the cut is ${JSON.stringify(onlyWest.cut)}, not ${head}`);
  t.true(onlyWest.lostSeqs > 0);
  // Coverage repair sees that gap, and its only home is unproven: it is skipped, not chosen.
  const skipped = d.controller.counters.get("coverage_target_unproven");
  await eventually(() => d.controller.counters.get("coverage_target_unproven") > skipped, "coverage repair skips the unproven holder again", 10_000, () => JSON.stringify(d.controller.counters.snapshot()));
  const started = d.controller.counters.get("coverage_copy_started");
  await eventually(() => d.controller.counters.get("coverage_target_unproven") > skipped + 2, "more rounds", 10_000);
  t.is(d.controller.counters.get("coverage_copy_started"), started, "no copy starts while its only target is unproven");

  // The status document shows both states.
  d.controller.evaluateSoon();
  await eventually(() => d.controller.status()?.audits?.some((a) => a.holder === "h-w" && a.state === "failed") === true && d.controller.status()!.audits!.some((a) => a.holder === "h-eu" && a.state === "passed"), "status shows both states", 10_000);
  const doc = d.controller.status()!;
  t.is(doc.audits!.find((a) => a.holder === "h-w")!.state, "failed");
  t.is(doc.audits!.find((a) => a.holder === "h-nj")!.state, "passed");
  t.not(doc.audits!.find((a) => a.holder === "h-nj")!.lastAuditAtMs, null);
  t.true(doc.scenarios.find((s) => s.name === ONLY_WEST.name)!.lostSeqs > 0);

  // Every audit is a span naming the holder, its reference and the outcome; the holders trace their answers.
  const spans = t.context.tracing.memoryExporter!.getFinishedSpans();
  const auditSpans = spans.filter((x) => x.name === "controller.retention_audit");
  t.true(auditSpans.some((x) => x.attributes["custody.holder"] === "h-w" && x.attributes["custody.audit_outcome"] === "failed" && x.attributes["custody.audit_reason"] === "digest mismatch"));
  t.true(auditSpans.some((x) => x.attributes["custody.holder"] === "h-eu" && x.attributes["custody.audit_outcome"] === "passed" && x.attributes["custody.reference"] !== "h-eu"));
  t.true(spans.some((x) => x.name === "holder.audit_answer"));

  // Cost per audited GiB: payload bytes read by the controller (reference copies) and by the audited holders, and the controller's CPU.
  const c = d.controller.counters;
  const ctlBytes = c.get("audit_bytes_read");
  let holderBytes = 0;
  for (const h of d.holders.values()) holderBytes += h.holder.counters.get("audit_bytes_read");
  const judged = c.get("audit_passed") + c.get("audit_failed") + c.get("audit_timeout");
  const gib = ctlBytes / 2 ** 30;
  t.true(ctlBytes > 0);
  t.log(
    `audits judged ${judged} (passed ${c.get("audit_passed")}, failed ${c.get("audit_failed")}, late ${c.get("audit_timeout")}, void ${c.get("audit_void")}); ` +
      `audited ${ctlBytes} B; controller read ${ctlBytes} B + holders read ${holderBytes} B; controller CPU ${(c.get("audit_cpu_us") / 1000).toFixed(1)} ms; ` +
      `per audited GiB: ${((ctlBytes + holderBytes) / ctlBytes).toFixed(2)} GiB read, ${(c.get("audit_cpu_us") / 1000 / gib).toFixed(0)} controller CPU ms`,
  );
});

test.serial("the audit byte budget bounds the cost: once a period's bytes are read, no new challenge starts until the period ends (overshoot at most one round)", async (t) => {
  const d = await deploy(t.context.supercluster, "vol-audit-budget", "use-vol-audit-budget", { controller: { retentionAudit: { ...AUDIT, everyMs: 100, maxBytesPerPeriod: 1, periodMs: 3_600_000 } } });
  t.context.defer(() => d.stop());
  await writeSome(d, 40, 3);
  const c = d.controller.counters;
  const judged = () => c.get("audit_passed") + c.get("audit_failed") + c.get("audit_timeout") + c.get("audit_void");
  await eventually(() => judged() > 0 && c.get("audit_skipped_budget") >= 10, "rounds refused by the spent budget", 30_000, () => `judged ${judged()}, skipped ${c.get("audit_skipped_budget")}`);
  const holders = Object.keys(d.controller.config.topology.holderSites).length;
  t.true(judged() <= holders, `${judged()} audits ran on a 1-byte budget (one round is at most ${holders})`);
  // The first test's cheating h-w may still be running on this supercluster under the same id: it
  // must not answer for the h-w of this volume (a lane it does not serve gets no answer).
  t.is(c.get("audit_failed") + c.get("audit_timeout"), 0, "no honest holder failed");
});
