import type { ExecutionContext } from "ava";
import { join } from "node:path";
import { DeployedProcess } from "../kit/deployed-process.ts";
import { DEPLOYMENT_READY_MS, initAndStartNats, type LoopbackDeploymentOptions } from "../kit/index.ts";
import { custodyStdout } from "../kit/custody-cli.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";

/**
 * The part every real-process deployment test shares: `custody init` and the regions' nats-servers
 * (via initAndStartNats), every pid it ever started (to check none is left), `start(instance)`
 * running one role from its config until it says it is ready, and a teardown that SIGKILLs what
 * is still running.
 */
export async function deployedNetwork(t: ExecutionContext, dirPrefix: string, o: LoopbackDeploymentOptions) {
  const roles = new Map<string, DeployedProcess>();
  const everyPid: number[] = [];
  const started: DeployedProcess[] = [];
  t.teardown(async () => {
    for (const p of [...roles.values(), ...started]) if (p.running) await p.signal("SIGKILL", 10_000);
  });
  const { out, index, servers } = await initAndStartNats(custodyStdout, () => tempDir(dirPrefix), o, (p) => {
    started.push(p);
    everyPid.push(p.pid);
  });
  const start = async (instance: string) => {
    const r = index.roles.find((x) => x.instance === instance)!;
    const p = DeployedProcess.role(instance, r.role, r.config);
    roles.set(instance, p);
    everyPid.push(p.pid);
    return await p.ready(DEPLOYMENT_READY_MS);
  };
  return {
    out,
    index,
    servers,
    roles,
    everyPid,
    start,
    eastUrl: index.natsServers.find((s) => s.region === "east")!.url,
    /** The operator's connection on the secured deployment (custody bootstrap finds it beside bootstrap.json). */
    asOperator: ["--operator-config", join(out, "operator", "nats.json")],
    /** The last output of every role process, for a failure message. */
    explain: () => [...roles.values()].map((p) => p.log.slice(-3_000)).join("\n"),
  };
}
