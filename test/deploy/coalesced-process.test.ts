/**
 * A deployed coalesced stream (issue #22 item 1) on real processes, secured (TLS + nkeys):
 * `custody init` gives the volume's derived lane `l0-coalesced` to the RAM holder `h-img`, which
 * declares no lane of its own; `custody bootstrap` creates that lane's obligation as coalesced; the
 * writer's workload feeds both streams under the permissions init derived. Where every raw holder
 * is lost, the controller's cut comes from h-img's coalesced receipts (`custody status` prints the
 * stream), and no role is refused a subject.
 */
import test from "ava";
import { join } from "node:path";
import { pidAlive } from "../kit/deployed-process.ts";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { deployedNetwork } from "./deployed-network.ts";

/** Generous bounds: they only end a hung run, they measure nothing. */
const SETTLE_MS = 90_000;
const STOP_MS = 60_000;
const RAW_LOST = "raw holders lost";

type Status = { scenarios: { name: string; cut: [string, number][] | null; contributors: string[]; stream?: string }[] };
type Ps = { processes: { role: string; id: string; counters: Record<string, number>; figures: Record<string, number> }[] };

test("a deployment with a coalesced stream: bootstrap creates the derived lane's coalesced obligation, h-img receipts coalesced cuts the controller reports where only it survives, and no role hits a permission violation", async (t) => {
  const { out, index, servers, roles, everyPid, start, eastUrl, asOperator, explain } = await deployedNetwork(t, "custody-coalesced-", {
    baseBuilder: false,
    coalesced: true,
    // Only h-img survives this scenario (h-e1 keeps RAM only; h-w1's disk goes with its host); the
    // empty genesis base (no bytes) is declared at h-img too.
    volumeExtras: {
      genesisBases: ["h-w1", "h-img"],
      scenarios: [
        { name: "crash:h-e1", losses: [{ domain: "host:e1-host", kind: "crash" }], deadlineSec: 3600, required: true },
        { name: RAW_LOST, losses: [{ domain: "host:e1-host", kind: "crash" }, { domain: "host:w1-host", kind: "site_destruction" }], deadlineSec: 3600, required: false },
      ],
    },
  });

  const boot = JSON.parse(await custody(["bootstrap", join(out, "bootstrap.json"), "--server", eastUrl, "--json"])) as { admitted: string[]; obligations: string[] };
  t.deepEqual(boot.admitted, ["h-e1", "h-w1", "h-img"]);
  t.deepEqual(boot.obligations, ["vol-d-l0", "vol-d-l0-coalesced"]);
  const shown = JSON.parse(await custody(["control", "show", "--server", eastUrl, ...asOperator, "--region", "ctl", "--json"])) as { obligations: { obligationId: string; representation: string; responsible: Record<string, unknown> }[] };
  const derived = shown.obligations.find((o) => o.obligationId === "vol-d-l0-coalesced");
  t.is(derived?.representation, "coalesced");
  t.deepEqual(Object.keys(derived?.responsible ?? {}), ["h-img"]);

  await start("controller-ctl-1");
  for (const r of index.roles.filter((x) => x.role === "holder")) await start(r.instance);
  await start("writer-w1");
  const writing = Date.now();

  const status = async () => JSON.parse(await custody(["status", "vol-d", "--server", eastUrl, ...asOperator, "--json"])) as Status;
  const ps = async () => JSON.parse(await custody(["ps", "--server", eastUrl, ...asOperator, "--wait", "1500", "--json"])) as Ps;
  const explainAll = async () => `${await custody(["status", "vol-d", "--server", eastUrl, ...asOperator, "--json"]).catch(() => "")}\n${await custody(["ps", "--server", eastUrl, ...asOperator, "--json"]).catch(() => "")}\n${explain()}`;

  // Where both raw holders are lost, only h-img's coalesced receipts give a cut: at least two windows.
  const lost = await until("the raw-holders-lost scenario has a coalesced cut from h-img", SETTLE_MS, async () => {
    const s = (await status()).scenarios.find((x) => x.name === RAW_LOST);
    const cut = s?.cut?.find(([l]) => l === "l0")?.[1] ?? 0;
    return s?.stream === "coalesced" && cut >= 64 ? s : undefined;
  }, explainAll);
  t.log(`coalesced cut ${JSON.stringify(lost.cut)} ${Date.now() - writing} ms after the writer started`);
  t.true(lost.contributors.includes("h-img"), JSON.stringify(lost));
  t.false(lost.contributors.includes("h-e1") || lost.contributors.includes("h-w1"));
  const table = (await custody(["status", "vol-d", "--server", eastUrl, ...asOperator])).split("\n");
  t.regex(table.find((l) => l.startsWith("scenario"))!, /\sstream\s/);
  t.regex(table.find((l) => l.startsWith(RAW_LOST))!, /\scoalesced\s/);

  // h-img holds the derived lane only; the raw holders never see it.
  const p = await ps();
  const figures = (id: string) => p.processes.find((x) => x.id === id)!.figures;
  t.true(figures("h-img")["vol-d/l0-coalesced.retainedMax"]! >= 64, JSON.stringify(figures("h-img")));
  t.is(figures("h-img")["vol-d/l0.retainedMax"], undefined);
  t.is(figures("h-e1")["vol-d/l0-coalesced.retainedMax"], undefined);
  // The controller sends a lane's release frontier only to holders that answer for that lane:
  // h-img, serving only the derived lane, is never offered l0's (it would refuse it as unknown).
  t.is(p.processes.find((x) => x.id === "h-img")!.counters["unknown_lane"] ?? 0, 0, JSON.stringify(p.processes.find((x) => x.id === "h-img")!.counters));

  const ends: Record<string, string> = {};
  // The RAM holder h-e1 before the controller: its drain waits for the releases the controller commits.
  for (const instance of ["writer-w1", "holder-h-e1", "holder-h-img", "controller-ctl-1", "holder-h-w1"]) {
    const e = await roles.get(instance)!.signal("SIGTERM", STOP_MS);
    ends[instance] = `${e.code}/${e.signal}/${e.inTime}`;
  }
  t.deepEqual(ends, { "writer-w1": "0/null/true", "controller-ctl-1": "0/null/true", "holder-h-e1": "0/null/true", "holder-h-w1": "0/null/true", "holder-h-img": "0/null/true" }, explain());
  // The derived lane travels under the permissions init derived: no role was refused a subject.
  for (const [instance, r] of roles) t.notRegex(r.log, /permission denied|Permissions Violation/i, instance);
  for (const s of servers) t.true((await s.signal("SIGTERM", STOP_MS)).inTime, s.log);
  t.deepEqual(everyPid.filter(pidAlive), [], "no process left");
});
