import type { Command } from "commander";
import type { z } from "zod";
import { failWith } from "../output.ts";
import {
  baseBuilderRoleSchema,
  controllerRoleSchema,
  holderRoleSchema,
  readRoleConfig,
  repairRoleSchema,
  writerRoleSchema,
} from "../../actors/runtime/index.ts";
import { runRepairWorker } from "../../actors/runtime/index.ts";
import { runBaseBuilder } from "../../actors/runtime/index.ts";
import { ConnectionLostError, runHolder, StateDirLockedError } from "../../actors/runtime/index.ts";
import { runWriter } from "../../actors/runtime/index.ts";
import { runController, runLeasedController } from "../../actors/runtime/index.ts";
import { serveMetrics, type MetricsOptions, type MetricsSource } from "../../actors/runtime/index.ts";

/** Exit code when the NATS connection closed for good (a supervisor should restart the process). */
export const EXIT_CONNECTION_LOST = 2;
/**
 * Exit code of a holder fenced by a newer incarnation of its identity (the control log admitted
 * it): it stopped serving. A supervisor must not restart it (systemd: `RestartPreventExitStatus=3`),
 * or the restart would in turn fence the newer one.
 */
export const EXIT_FENCED = 3;
/** Exit code when a stop (SIGTERM/SIGINT) did not finish within STOP_DEADLINE_MS. */
export const EXIT_STOP_TIMEOUT = 4;
/**
 * Exit code when another live process holds the role's state directory (`state_dir_locked`); nothing
 * was started or changed.
 */
export const EXIT_STATE_DIR_LOCKED = 5;
/**
 * How long a stop may take before the process exits anyway: longer than the writer's default
 * drain deadline (30 s), so a drain that can finish does, and a stop that hangs (its NATS servers
 * gone, a write waiting on backpressure) still ends.
 */
export const STOP_DEADLINE_MS = 45_000;

/** What every role runner returns. */
interface Running {
  readonly lost: Promise<void>;
  /** Resolves with the one line to print when a newer incarnation fenced this process (holders). */
  readonly fenced?: Promise<Error>;
  /** What a stop resolves with is the role's own report (a holder's drain); the process already printed it. */
  stop(): Promise<unknown>;
}

/** What `serve` needs from a started role: how to stop it, what to print when ready, and what `/metrics` shows. */
interface Served extends Running {
  readonly ready: Record<string, unknown>;
  readonly metrics: MetricsSource;
}

/**
 * Runs `stop` and resolves true when it finished within `ms`, false when the deadline came first (a
 * failed stop counts as finished).
 */
export async function stopWithin(stop: () => Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<false>((res) => (timer = setTimeout(() => res(false), ms)));
  try {
    return await Promise.race([
      stop().then(
        () => true,
        () => true,
      ),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs one role until SIGTERM/SIGINT (stop, exit 0), until its connection closes for good (one
 * error line, exit 2: it never runs deaf) or until a newer incarnation fences it (one error line,
 * exit 3). A start that fails prints one error line and exits 1 — 5 when another live process
 * holds its state directory; a stop that has not finished after STOP_DEADLINE_MS exits 4.
 */
async function serve<C extends { metrics?: MetricsOptions | undefined }>(
  role: string,
  file: string,
  schema: z.ZodType<C>,
  start: (cfg: C) => Promise<Served>,
): Promise<void> {
  try {
    const cfg = readRoleConfig(file, schema);
    const started = await start(cfg);
    let r: Running = started;
    let metricsUrl: string | undefined;
    if (cfg.metrics !== undefined) {
      const endpoint = await serveMetrics(started.metrics, cfg.metrics).catch(async (err: unknown) => {
        await started.stop();
        throw err;
      });
      metricsUrl = endpoint.url;
      r = {
        lost: started.lost,
        ...(started.fenced ? { fenced: started.fenced } : {}),
        stop: () => started.stop().finally(() => endpoint.close()),
      };
    }
    process.stdout.write(
      JSON.stringify({
        ready: true,
        role,
        pid: process.pid,
        ...started.ready,
        ...(metricsUrl ? { metrics: metricsUrl } : {}),
      }) + "\n",
    );
    const ended = await new Promise<"signal" | "lost" | Error>((resolve) => {
      process.once("SIGTERM", () => resolve("signal"));
      process.once("SIGINT", () => resolve("signal"));
      void r.lost.then(() => resolve("lost"));
      void r.fenced?.then(resolve);
    });
    if (ended === "lost") {
      failWith(new ConnectionLostError(role));
      process.exit(EXIT_CONNECTION_LOST);
    }
    if (ended instanceof Error) {
      // Fenced: the role already serves nothing; close what is open (no drain) and say why in one line.
      failWith(ended);
      await stopWithin(() => r.stop(), STOP_DEADLINE_MS);
      process.exit(EXIT_FENCED);
    }
    const stopped = await stopWithin(() => r.stop(), STOP_DEADLINE_MS);
    if (!stopped) {
      process.stderr.write(`custody run ${role}: stop did not finish within ${STOP_DEADLINE_MS} ms; exiting\n`);
      process.exit(EXIT_STOP_TIMEOUT);
    }
    process.exit(0);
  } catch (err) {
    failWith(err);
    process.exit(err instanceof StateDirLockedError ? EXIT_STATE_DIR_LOCKED : 1);
  }
}

/**
 * `custody run <holder|writer|controller|base-builder|repair> --config FILE`: runs one role as this process. It prints
 * one JSON line when it serves (`{"ready":true,"role":…}`), runs until SIGTERM or SIGINT, then stops
 * and exits 0. A start that fails (bad config, an incarnation that would be reused, NATS
 * unreachable) prints one error line and exits 1 (5: its state directory is held by a live process);
 * a connection closed for good exits 2; a holder fenced by a newer incarnation exits 3.
 */
export function register(program: Command): void {
  const run = program.command("run").description("Run one role of the custody network as this process");
  run
    .command("holder")
    .description("Run a holder from its role config (stateDir, keyFile, controlRegion, nats, holder)")
    .requiredOption("--config <file>", "role configuration (JSON)")
    .action((o: { config: string }) => serve("holder", o.config, holderRoleSchema, startHolder));
  run
    .command("writer")
    .description("Run a volume writer from its role config (stateDir, dataKeyFile, volume, writer, optional workload)")
    .requiredOption("--config <file>", "role configuration (JSON)")
    .action((o: { config: string }) => serve("writer", o.config, writerRoleSchema, startWriter));
  run
    .command("base-builder")
    .description(
      "Run a base builder beside a store holder (holder, volume, lane, blockCount, dir, dataKeyFile, " +
        "intervalMs, minNewSeqs)",
    )
    .requiredOption("--config <file>", "role configuration (JSON)")
    .action((o: { config: string }) => serve("base-builder", o.config, baseBuilderRoleSchema, startBaseBuilder));
  run
    .command("controller")
    .description("Run a controller from its role config (nats, controller)")
    .requiredOption("--config <file>", "role configuration (JSON)")
    .action((o: { config: string }) => serve("controller", o.config, controllerRoleSchema, startController));
  run
    .command("repair")
    .description(
      "Run a repair worker from its role config (nats, workerId, volumes): it takes the repairs its volumes' " +
        "controllers hand out",
    )
    .requiredOption("--config <file>", "role configuration (JSON)")
    .action((o: { config: string }) => serve("repair", o.config, repairRoleSchema, startRepair));
}

/** A holder: ready with its id and incarnation; its metrics add the holder's own. */
async function startHolder(cfg: z.infer<typeof holderRoleSchema>): Promise<Served> {
  const r = await runHolder(cfg);
  return {
    ...r,
    ready: { holderId: r.holder.id, incarnation: r.holder.incarnation },
    metrics: {
      role: "holder",
      id: r.holder.id,
      counters: () => r.holder.counters.snapshot(),
      ...(r.metrics ? { holder: r.metrics } : {}),
    },
  };
}

/** A volume writer: ready with its id and term. */
async function startWriter(cfg: z.infer<typeof writerRoleSchema>): Promise<Served> {
  const r = await runWriter(cfg);
  return {
    ...r,
    ready: { writerId: r.writer.id, term: r.term },
    metrics: { role: "writer", id: r.writer.id, counters: () => r.writer.counters.snapshot() },
  };
}

/** A base builder: ready with its holder and the base it has (null before its first). */
async function startBaseBuilder(cfg: z.infer<typeof baseBuilderRoleSchema>): Promise<Served> {
  const r = await runBaseBuilder(cfg);
  return {
    ...r,
    ready: { holder: cfg.holder, base: r.builder.base?.snapshotId ?? null },
    metrics: { role: "base-builder", id: cfg.holder, counters: () => r.counters.snapshot() },
  };
}

/** A controller, leased when its volume has standbys; its metrics add the status document. */
async function startController(cfg: z.infer<typeof controllerRoleSchema>): Promise<Served> {
  if (cfg.lease !== undefined) {
    // A volume with standbys: this process may start as one (`active` in the ready line).
    const l = await runLeasedController(cfg);
    return {
      ...l,
      ready: { controllerId: l.id, lease: l.keeper.role },
      metrics: {
        role: "controller",
        id: l.id,
        counters: () => l.counters.snapshot(),
        status: () => l.current()?.status(),
      },
    };
  }
  const r = await runController(cfg);
  const id = r.controller.id;
  return {
    ...r,
    ready: { controllerId: id },
    metrics: {
      role: "controller",
      id,
      counters: () => r.controller.counters.snapshot(),
      status: () => r.controller.status(),
    },
  };
}

/** A repair worker: ready with its id and volumes; its metrics add the repairs running. */
async function startRepair(cfg: z.infer<typeof repairRoleSchema>): Promise<Served> {
  const r = await runRepairWorker(cfg);
  return {
    ...r,
    ready: { workerId: cfg.workerId, volumes: cfg.volumes },
    metrics: {
      role: "repair",
      id: cfg.workerId,
      counters: () => r.counters.snapshot(),
      repairsRunning: () => r.worker.running,
    },
  };
}
