import {
  AnnouncedStandbys,
  DEFAULT_LEASE_TIMINGS,
  LeaseKeeper,
  startController,
  type Controller,
  type LeaseTimings,
} from "../index.ts";
import type { ControllerConfig } from "../index.ts";
import { Counters, CustodyError, systemClock } from "../../core/index.ts";
import { nodeFileLayer } from "../../core/index.ts";
import { ControlLogFollower, type ControlState } from "../../custody/index.ts";
import { openJetStreamControlLog } from "../../transport/index.ts";
import { checkControlLogHead, readControlLogHead, writeControlLogHead } from "./control-log-head.ts";
import { connectRole } from "./connect.ts";
import { receiptedSamples } from "./custody-ranges.ts";
import { loadControlTrust } from "./control-trust-files.ts";
import { startFailure } from "./role-start-error.ts";
import { serveProcessStats } from "./process-stats.ts";
import type { ControllerRoleConfig } from "./role-config.ts";
import { startRoleTracing } from "./role-tracing.ts";
import { lockStateDir } from "./state-dir-lock.ts";

/** A controller running as a process. */
export interface RunningController {
  readonly controller: Controller;
  readonly lost: Promise<void>;
  stop(): Promise<void>;
}

/** How often the verified head is persisted when it moved (ms). */
const HEAD_PERSIST_MS = 250;

/**
 * Persists the head the controller's follower verified whenever it moved (one write at a time).
 * A crash loses at most the last HEAD_PERSIST_MS of progress of the persisted head, never more.
 */
function persistHeads(
  controlState: () => ControlState,
  dir: string,
  region: string,
  persisted: number,
): { stop(): Promise<void> } {
  let writing: Promise<void> = Promise.resolve();
  const tick = () => {
    writing = writing
      .then(async () => {
        const s = controlState();
        if (s.lastSeq <= persisted) return;
        // The entry at lastSeq: a skipped (unsigned) entry there has its own hash, not the chain head's.
        await writeControlLogHead(nodeFileLayer, dir, { region, seq: s.lastSeq, hash: s.lastEntryHash ?? s.headHash });
        persisted = s.lastSeq;
      })
      .catch(
        (err: unknown) =>
          void process.stderr.write(`controller: cannot persist the control-log head: ${String(err)}\n`),
      );
  };
  tick();
  const timer = setInterval(tick, HEAD_PERSIST_MS);
  return {
    async stop() {
      clearInterval(timer);
      tick();
      await writing;
    },
  };
}

/** What both kinds of controller process open before their job: lock, connection, tracing, log, trust, standbys. */
interface ControllerBase {
  readonly c: ControllerConfig;
  readonly transport: Awaited<ReturnType<typeof connectRole>>["transport"];
  readonly lost: Promise<void>;
  readonly store: Awaited<ReturnType<typeof openJetStreamControlLog>>;
  readonly files: ReturnType<typeof loadControlTrust>;
  readonly logRegion: string;
  readonly seen: Awaited<ReturnType<typeof readControlLogHead>>;
  readonly counters: Counters;
  readonly standbys: AnnouncedStandbys | undefined;
  /** Releases what was opened, in reverse (after the job's own parts stopped). */
  close(): Promise<void>;
}

/**
 * Opens a controller process's common parts. With a state directory, one process per directory
 * (StateDirLockedError for a second start). The log is never created here: a missing stream was
 * never bootstrapped (`custody log init`) or vanished. A persisted head is checked against the log.
 */
async function openControllerBase(cfg: ControllerRoleConfig): Promise<ControllerBase> {
  const c = cfg.controller as unknown as ControllerConfig;
  const lock =
    cfg.stateDir === undefined ? undefined : lockStateDir(cfg.stateDir, { role: "controller", id: c.controllerId });
  const { transport, lost } = await connectRole(cfg.nats, `controller-${c.controllerId}`).catch((err: unknown) => {
    lock?.release();
    throw err;
  });
  const tracing = startRoleTracing(cfg.spanFile, "controller", c.controllerId, { "custody.region": c.region });
  const closeOpened = async () => {
    await transport.close();
    await tracing.stop();
    lock?.release();
  };
  try {
    const logRegion = cfg.controlLogRegion ?? c.region;
    const store = await openJetStreamControlLog(transport.connection, { region: logRegion });
    const files = loadControlTrust(cfg.controlTrust);
    const seen =
      cfg.stateDir === undefined ? undefined : await readControlLogHead(nodeFileLayer, cfg.stateDir, logRegion);
    if (seen !== undefined) await checkControlLogHead(store, seen);
    const counters = new Counters();
    // Standby holders run as their own processes and ask to be admitted; the launcher takes the one the deployment
    // keyed.
    const standbys =
      (c.repair?.standby.length ?? 0) > 0
        ? new AnnouncedStandbys({
            transport,
            clock: systemClock,
            counters,
            standby: c.repair!.standby,
            sites: c.topology.sites,
          })
        : undefined;
    return {
      c,
      transport,
      lost,
      store,
      files,
      logRegion,
      seen,
      counters,
      standbys,
      async close() {
        standbys?.stop();
        await store.close();
        await closeOpened();
      },
    };
  } catch (err) {
    await closeOpened();
    throw startFailure(
      err,
      `controller ${c.controllerId}`,
      `control log ${cfg.controlLogRegion ?? c.region} via ${transport.connection.getServer()}`,
    );
  }
}

/**
 * Starts a controller process on its region's control log (which it folds before serving). With a
 * `stateDir`, it first checks the log still holds the head it verified before (throws
 * ControlLogRegressionError `log_regression`/`log_fork`, or `control_log_missing` when the stream
 * vanished) and keeps persisting the head it verifies.
 */
export async function runController(cfg: ControllerRoleConfig): Promise<RunningController> {
  const base = await openControllerBase(cfg);
  const { c, transport, lost, store, files, logRegion, seen, counters, standbys } = base;
  try {
    const dir = cfg.stateDir;
    const controller = await startController(c, {
      transport,
      clock: systemClock,
      store,
      counters,
      ...(standbys ? { repair: standbys } : {}),
      ...(files.trust ? { trust: files.trust } : {}),
      ...(files.signer ? { signer: files.signer(c.controllerId) } : {}),
    });
    const heads =
      dir === undefined ? undefined : persistHeads(() => controller.controlState(), dir, logRegion, seen?.seq ?? 0);
    // `evaluations` is the running total (what `custody ps` and watchers compare between reads); the
    // duration quantiles cover only the evaluations since the previous read.
    // `writerHeadMax`: the highest head writer progress reported on any lane (what an attack on progress must not
    // move).
    // Its stats carry each holder's verified receipted ranges (`receipted.<holder>.<lane>`, see custody-ranges.ts).
    const stats = serveProcessStats(transport, "controller", () => {
      const d = controller.takeEvalDurations().sort((a, b) => a - b);
      const q = (p: number) => (d.length === 0 ? 0 : d[Math.min(d.length - 1, Math.floor(p * d.length))]!);
      return {
        id: c.controllerId,
        counters: controller.counters.snapshot(),
        figures: {
          evaluations: controller.counters.get("evaluations"),
          evalsSinceLastRead: d.length,
          evalMsP50: q(0.5),
          evalMsP99: q(0.99),
          evalMsMax: d.at(-1) ?? 0,
          controlLogApiRequests: store.apiRequests,
          writerHeadMax: Math.max(0, ...Object.values(controller.evaluationState().source.lanes)),
        },
        samples: { evalMs: d.map((x) => Math.round(x * 100) / 100), ...receiptedSamples(controller.holdings()) },
      };
    });
    // Listed by `custody ps` (a NATS service) before the process says it is ready.
    await stats.registered;
    return {
      controller,
      lost,
      async stop() {
        stats.unsubscribe();
        await heads?.stop();
        controller.stop();
        await base.close();
      },
    };
  } catch (err) {
    await base.close();
    throw startFailure(
      err,
      `controller ${c.controllerId}`,
      `control log ${logRegion} via ${transport.connection.getServer()}`,
    );
  }
}

/**
 * A controller process of a volume with standbys: it runs the controller's job only while it holds the volume's lease.
 */
export interface RunningLeasedController {
  readonly id: string;
  readonly counters: Counters;
  readonly keeper: LeaseKeeper;
  /** The running controller while active; undefined while standby. */
  current(): Controller | undefined;
  readonly lost: Promise<void>;
  stop(): Promise<void>;
}

/** The lease timings of the config; every claim would be refused (`malformed`) when the timeout is not the longer. */
function leaseTimings(cfg: ControllerRoleConfig): LeaseTimings {
  const timings: LeaseTimings = { ...DEFAULT_LEASE_TIMINGS, ...cfg.lease };
  // A configuration error now, not a volume without a controller later.
  if (timings.timeoutMs <= timings.renewMs)
    throw new CustodyError(
      "bad_lease_timings",
      `lease timeoutMs ${timings.timeoutMs} must exceed renewMs ${timings.renewMs}`,
      { ...timings },
    );
  return timings;
}

/** A leased controller's figures for `custody ps`: active or standby, evaluation times, control-log requests. */
function leasedControllerStats(
  controllerId: string,
  counters: Counters,
  keeper: LeaseKeeper,
  store: { readonly apiRequests: number },
  current: Controller | undefined,
) {
  const d = current?.takeEvalDurations().sort((a, b) => a - b) ?? [];
  const q = (p: number) => (d.length === 0 ? 0 : d[Math.min(d.length - 1, Math.floor(p * d.length))]!);
  return {
    id: controllerId,
    counters: counters.snapshot(),
    figures: {
      active: keeper.role === "active" ? 1 : 0,
      evaluations: counters.get("evaluations"),
      evalsSinceLastRead: d.length,
      evalMsP50: q(0.5),
      evalMsP99: q(0.99),
      evalMsMax: d.at(-1) ?? 0,
      controlLogApiRequests: store.apiRequests,
    },
    samples: {
      evalMs: d.map((x) => Math.round(x * 100) / 100),
      ...(current ? receiptedSamples(current.holdings()) : {}),
    },
  };
}

/**
 * Starts a controller process as a standby of its volume (`cfg.lease`, see LeaseKeeper): it
 * follows the control log and claims the volume's lease when it is free or its holder has been
 * silent for the lease's timeout; then it starts the controller's job from the folded log. When
 * the log shows another holder it stops that job at once and says so in one log line. Same
 * start-up checks as `runController`.
 */
export async function runLeasedController(cfg: ControllerRoleConfig): Promise<RunningLeasedController> {
  const c = cfg.controller as unknown as ControllerConfig;
  const timings = leaseTimings(cfg);
  const base = await openControllerBase(cfg);
  const { transport, lost, store, files, logRegion, seen, counters, standbys } = base;
  try {
    const dir = cfg.stateDir;
    const signer = files.signer ? files.signer(c.controllerId) : undefined;
    const follower = new ControlLogFollower(store, undefined, files.trust);
    let current: Controller | undefined;
    const keeper = new LeaseKeeper(c.topology.volume, timings, {
      store,
      follower,
      identity: { controller: c.controllerId, clock: systemClock, ...(signer ? { signer } : {}) },
      clock: systemClock,
      counters,
      log: (line) => void process.stderr.write(`${line}\n`),
      becomeActive: async () => {
        current = await startController(c, {
          transport,
          clock: systemClock,
          store,
          counters,
          ...(standbys ? { repair: standbys } : {}),
          ...(files.trust ? { trust: files.trust } : {}),
          ...(signer ? { signer } : {}),
        });
      },
      stepDown: async () => {
        current?.stop();
        current = undefined;
      },
    });
    await keeper.start();
    const heads =
      dir === undefined
        ? undefined
        : persistHeads(() => current?.controlState() ?? follower.state, dir, logRegion, seen?.seq ?? 0);
    const stats = serveProcessStats(transport, "controller", () =>
      leasedControllerStats(c.controllerId, counters, keeper, store, current),
    );
    await stats.registered;
    return {
      id: c.controllerId,
      counters,
      keeper,
      current: () => current,
      lost,
      async stop() {
        stats.unsubscribe();
        await keeper.stop();
        await heads?.stop();
        current?.stop();
        await base.close();
      },
    };
  } catch (err) {
    await base.close();
    throw startFailure(
      err,
      `controller ${c.controllerId}`,
      `control log ${logRegion} via ${transport.connection.getServer()}`,
    );
  }
}
