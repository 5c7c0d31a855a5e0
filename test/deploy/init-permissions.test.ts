/**
 * Every role does its whole job with the permissions `custody init` generated (not hand-made
 * ones): on the secured deployment it writes, the writer's units are receipted, the controller
 * commits and reports, and the base builder — which fetches its holder's units of its volume and
 * announces the base — builds a base, below which the controller releases the store's WAL. No
 * process is refused anything by the server on the way.
 */
import test from "ava";
import { join } from "node:path";
import { custodyStdout as custody } from "../kit/custody-cli.ts";
import { untilValue as until } from "../kit/until.ts";
import { deployedNetwork } from "./deployed-network.ts";

/** Generous bound: it only ends a hung run, it measures nothing. */
const SETTLE_MS = 90_000;

type Ps = { processes: { role: string; id: string; figures: Record<string, number> }[] };

test("with init's generated permissions every role does its job: writes are receipted, the base builder builds a base (baseThroughSeq > 0) and the store releases below it; no process is refused anything", async (t) => {
  const { out, index, start, eastUrl, asOperator, roles, explain } = await deployedNetwork(t, "custody-initperm-", { workloadIntervalMs: 20 });
  await custody(["bootstrap", join(out, "bootstrap.json"), "--server", eastUrl]);
  await start("controller-ctl-1");
  for (const r of index.roles.filter((x) => x.role === "holder")) await start(r.instance);
  for (const r of index.roles.filter((x) => x.role === "writer" || x.role === "base-builder")) await start(r.instance);

  const ps = async () => JSON.parse(await custody(["ps", "--server", eastUrl, ...asOperator, "--wait", "1000", "--json"])) as Ps;
  const figure = (p: Ps, id: string, suffix: string) => Object.entries(p.processes.find((x) => x.id === id)?.figures ?? {}).find(([k]) => k.endsWith(suffix))?.[1] ?? 0;
  const explainPs = async () => `${await custody(["ps", "--server", eastUrl, ...asOperator, "--json"]).catch(() => "")}\n${explain()}`;
  const built = await until(
    "a base is built and h-w1 releases WAL below it",
    SETTLE_MS,
    async () => {
      const p = await ps();
      const base = figure(p, "base-builder-h-w1", "baseThroughSeq");
      const released = figure(p, "h-w1", ".releasedMax");
      return base > 0 && released > 0 ? { base, released } : undefined;
    },
    explainPs,
  );
  t.true(built.base > 0, `baseThroughSeq ${built.base}`);
  t.true(built.released > 0 && built.released <= built.base, `h-w1 released through ${built.released}, below the base through ${built.base}`);
  for (const [instance, p] of roles) t.false(/permission denied|Permissions Violation/i.test(p.log), `${instance} was refused something:\n${p.log.slice(-2_000)}`);
});
