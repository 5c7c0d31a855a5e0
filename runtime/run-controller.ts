import { startController, type Controller } from "../actors/controller.ts";
import type { ControllerConfig } from "../actors/controller/controller-config.ts";
import { systemClock } from "../core/clock.ts";
import { openJetStreamControlLog } from "../transport/jetstream-control-log.ts";
import { connectRole } from "./connect.ts";
import { loadControlTrust } from "./control-trust-files.ts";
import { serveProcessStats } from "./process-stats.ts";
import type { ControllerRoleConfig } from "./role-config.ts";

/** A controller running as a process. */
export interface RunningController {
  readonly controller: Controller;
  readonly lost: Promise<void>;
  stop(): Promise<void>;
}

/** Starts a controller process on its region's control log (which it folds before serving). */
export async function runController(cfg: ControllerRoleConfig): Promise<RunningController> {
  const c = cfg.controller as unknown as ControllerConfig;
  const { transport, lost } = await connectRole(cfg.nats, `controller-${c.controllerId}`);
  try {
    const store = await openJetStreamControlLog(transport.connection, { region: c.region });
    const files = loadControlTrust(cfg.controlTrust);
    const controller = await startController(c, { transport, clock: systemClock, store, ...(files.trust ? { trust: files.trust } : {}), ...(files.signer ? { signer: files.signer(c.controllerId) } : {}) });
    const stats = serveProcessStats(transport, "controller", () => {
      const d = controller.core.takeEvalDurations().sort((a, b) => a - b);
      const q = (p: number) => (d.length === 0 ? 0 : d[Math.min(d.length - 1, Math.floor(p * d.length))]!);
      return { id: c.controllerId, counters: controller.core.counters.snapshot(), figures: { evaluations: d.length, evalMsP50: q(0.5), evalMsP99: q(0.99), evalMsMax: d.at(-1) ?? 0, controlLogApiRequests: store.apiRequests }, samples: { evalMs: d.map((x) => Math.round(x * 100) / 100) } };
    });
    // Listed by `custody ps` (a NATS service) before the process says it is ready.
    await stats.registered;
    return {
      controller,
      lost,
      async stop() {
        stats.unsubscribe();
        controller.stop();
        await store.close();
        await transport.close();
      },
    };
  } catch (err) {
    await transport.close();
    throw err;
  }
}
