/**
 * Controller failover on real processes (issue #45): `custody init` gives vol-d two controllers,
 * ctl-1 (east) and ctl-1b (west), sharing it through the control lease. ctl-1 claims it and
 * releases; SIGSTOP freezes it; ctl-1b sees no heartbeat for the lease's timeout, claims the next
 * term and resumes the job from the folded log (it commits releases). SIGCONT wakes ctl-1: it
 * learns from the log it lost the lease, steps down (one log line) and nothing it commits after
 * the claim counts (an entry signed with its key and appended anyway is refused `not_lease_holder`
 * and counted). No range is released twice.
 */
import test from "ava";
import { join } from "node:path";
import { operatorConnectOptions } from "../../cli/operator-connection.ts";
import { ControlConflictError, ControlFenceCode, ControlLogFollower, leaseOf, type ControlLogEntry } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { loadControlTrust } from "../../actors/runtime/control-trust-files.ts";
import { controllerRoleSchema, readRoleConfig } from "../../actors/runtime/role-config.ts";
import { pidAlive } from "../kit/deployed-process.ts";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { openJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { deployedNetwork } from "./deployed-network.ts";

/** Generous bounds: they only end a hung run, they measure nothing. */
const SETTLE_MS = 120_000;
const STOP_MS = 60_000;

test("SIGSTOP the active controller: the standby claims the next term and resumes releasing; the woken controller steps down and nothing it commits counts", async (t) => {
  const { out, index, servers, roles, everyPid, start, eastUrl, asOperator, explain } = await deployedNetwork(t, "custody-lease-", { metrics: true, baseBuilder: false, standbyController: true });
  const boot = JSON.parse(await custody(["bootstrap", join(out, "bootstrap.json"), "--server", eastUrl, "--json"])) as { controllers: string[] };
  t.deepEqual([...boot.controllers].sort(), ["ctl-1", "ctl-1b"], "both controllers admitted for vol-d");

  // The test reads the log as the operator, trusting what the controllers' role configs trust.
  const ctlRole = index.roles.find((r) => r.instance === "controller-ctl-1")!;
  const { trust } = loadControlTrust(readRoleConfig(ctlRole.config, controllerRoleSchema).controlTrust);
  const nc = await connectNats({ ...operatorConnectOptions({ server: eastUrl, operatorConfig: asOperator[1]! }, "lease-test"), maxReconnectAttempts: 0 });
  t.teardown(() => closeNats(nc));
  const store = await openJetStreamControlLog(nc, { region: "ctl" });
  const reader = new ControlLogFollower(store, undefined, trust);
  const accepted = async (): Promise<ControlLogEntry[]> => {
    const s = await reader.refresh();
    const refused = new Set(s.rejected.map((r) => r.seq));
    return (await store.readAll()).filter((e) => !refused.has(e.seq));
  };
  const releasesBy = async (who: string, after = 0) => (await accepted()).filter((e) => e.seq > after && e.event.controller === who && e.event.type === "release_ranges");

  t.like(await start("controller-ctl-1"), { lease: "active" }, "the first controller claims the free lease");
  t.like(await start("controller-ctl-1b"), { lease: "standby" }, "the second waits as a standby");
  for (const r of index.roles.filter((x) => x.role === "holder")) await start(r.instance);
  await start("writer-w1");
  await until("ctl-1 commits releases", SETTLE_MS, async () => ((await releasesBy("ctl-1")).length >= 2 ? true : undefined), explain);
  t.like(leaseOf(await reader.refresh(), "vol-d"), { holder: "ctl-1", term: 1 });

  const active = roles.get("controller-ctl-1")!;
  process.kill(active.pid, "SIGSTOP");
  const stoppedAt = Date.now();
  const claim = await until("ctl-1b claims the lease", SETTLE_MS, async () => {
    const l = leaseOf(await reader.refresh(), "vol-d");
    return l?.holder === "ctl-1b" ? l : undefined;
  }, explain);
  const claimEntry = (await store.readAll()).find((e) => e.seq === claim.sinceSeq)!;
  t.log(`standby took over ${claimEntry.event.issuedAt - stoppedAt} ms after SIGSTOP (lease timeout 3000 ms, checks every 250 ms)`);
  t.is(claim.term, 2);
  await until("ctl-1b resumes releasing from the folded log", SETTLE_MS, async () => ((await releasesBy("ctl-1b", claim.sinceSeq)).length >= 1 ? true : undefined), explain);

  process.kill(active.pid, "SIGCONT");
  await until("the woken ctl-1 steps down", SETTLE_MS, async () => (/ctl-1: lost the control lease of vol-d \(ctl-1b holds it at term 2\); stepping down to standby/.test(active.log) ? true : undefined), explain);
  const woke = await store.lastSeq();
  await until("ctl-1b keeps releasing after ctl-1 woke", SETTLE_MS, async () => ((await releasesBy("ctl-1b", woke)).length >= 1 ? true : undefined), explain);
  t.true(active.running, "the deposed controller keeps running, as a standby");

  // A deposed controller that skipped its own check would still be refused by every reader: an
  // entry signed with ctl-1's key, prepared on the current head, is counted and changes nothing.
  const ctl1Signer = loadControlTrust(readRoleConfig(ctlRole.config, controllerRoleSchema).controlTrust).signer!("ctl-1");
  let head = await reader.refresh();
  let forgedSeq = 0;
  const ob = Object.values(head.obligations).find((o) => o.volume === "vol-d" && o.lane === "l0")!;
  for (let attempt = 1; forgedSeq === 0; attempt++) {
    const on = { region: "ctl", controller: "ctl-1", preparedEpoch: head.topologyEpoch, preparedGeneration: head.policyGeneration, prevHash: head.headHash, issuedAt: Date.now() };
    try {
      forgedSeq = await store.append({ ...on, type: "release_ranges", obligationId: ob.obligationId, holderId: "h-e1", ranges: RangeSet.of(1, 1), reliesOn: ["h-w1"] }, head.lastSeq, ctl1Signer);
    } catch (err) {
      // ctl-1b committed meanwhile: prepare on the new head.
      if (!(err instanceof ControlConflictError) || attempt >= 20) throw err;
      head = await reader.refresh();
    }
  }
  const afterForged = await reader.refresh();
  t.like(afterForged.rejected.find((r) => r.seq === forgedSeq), { code: ControlFenceCode.not_lease_holder });
  t.deepEqual(afterForged.obligations[ob.obligationId]!.released, head.obligations[ob.obligationId]!.released, "it released nothing");

  // What the log says: after the claim, nothing of ctl-1 counts; whatever it got in was refused.
  const s = await reader.refresh();
  const all = await store.readAll();
  const byCtl1After = all.filter((e) => e.seq > claim.sinceSeq && e.seq !== forgedSeq && e.event.controller === "ctl-1");
  const refused = new Map(s.rejected.map((r) => [r.seq, r.code]));
  for (const e of byCtl1After) t.true(([ControlFenceCode.not_lease_holder, ControlFenceCode.stale_term] as string[]).includes(refused.get(e.seq) ?? "accepted"), `ctl-1's ${e.event.type} at ${e.seq} was refused`);
  t.log(`ctl-1 entries after the claim: ${byCtl1After.length} (all refused); rejected in the fold: ${s.rejected.length}`);
  const ok = await accepted();
  const terms = new Map<number, Set<string>>();
  let term = 0;
  for (const e of ok) {
    if (e.event.type === "claim_lease") term = e.event.term;
    if (e.event.controller.startsWith("ctl-") && term > 0) terms.set(term, (terms.get(term) ?? new Set()).add(e.event.controller));
  }
  for (const [n, who] of terms) t.is(who.size, 1, `term ${n} has one committer: ${[...who].join(", ")}`);
  // No range released twice, whoever committed it.
  const released = new Map<string, RangeSet>();
  for (const e of ok) {
    if (e.event.type !== "release_ranges") continue;
    const key = `${e.event.obligationId}/${e.event.holderId}`;
    const before = released.get(key) ?? RangeSet.EMPTY;
    t.true(before.intersect(e.event.ranges).isEmpty, `${key} ${e.event.ranges.toString()} released once`);
    released.set(key, before.union(e.event.ranges));
  }
  const ps = JSON.parse(await custody(["ps", "--server", eastUrl, ...asOperator, "--wait", "1500", "--json"])) as { processes: { role: string; id: string; counters: Record<string, number>; figures: Record<string, number> }[] };
  const ctl1 = ps.processes.find((p) => p.id === "ctl-1");
  const ctl1b = ps.processes.find((p) => p.id === "ctl-1b");
  t.like(ctl1, { figures: { active: 0 }, counters: { lease_lost: 1 } }, JSON.stringify(ctl1));
  t.log(`ctl-1's refusals before it stepped down: ${JSON.stringify(Object.fromEntries(Object.entries(ctl1!.counters).filter(([k]) => /lease|conflict/.test(k))))}`);
  t.like(ctl1b, { figures: { active: 1 }, counters: { lease_claimed: 1 } }, JSON.stringify(ctl1b));

  for (const instance of ["writer-w1", "controller-ctl-1", "controller-ctl-1b", "holder-h-e1", "holder-h-w1"]) await roles.get(instance)!.signal("SIGTERM", STOP_MS);
  await store.close();
  for (const sv of servers) t.true((await sv.signal("SIGTERM", STOP_MS)).inTime, sv.log);
  t.deepEqual(everyPid.filter(pidAlive), [], "no process left");
});
