import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { fetchUnits, recoverVolume, stageRecoveryDestination, type BuildProgress } from "../../actors/index.ts";
import { CustodyError, nodeFileLayer } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { checkToken } from "../../transport/protocol/index.ts";
import { discardStagedVolume, VolumeExistsError, VolumeFiles } from "../../volume/index.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import {
  nextStatus,
  noControllerAnd,
  positiveInt,
  StatusTimeoutError,
  withoutController,
  type WithoutControllerOptions,
} from "./status.ts";
import { withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";
import { placeRecoveryHolds, registerRecovery, type RecoveryRegistration } from "../../actors/index.ts";
import { evaluateScenario, type Scenario } from "../../policies/index.ts";
import { operatorAccess, withOperatorKey, type OperatorKeyOptions } from "../operator-signing.ts";
import {
  connectFirst,
  noControllerLine,
  serverUrls,
  statusFromLogAndHolders,
  volumeDeployment,
  type LogStatus,
} from "../log-status.ts";
import { cliIo } from "../cli-io.ts";
import { readDataKeyFile } from "../../actors/runtime/index.ts";
import { recoveryTarget } from "../recovery-target.ts";
import { InterruptedError, interruptible, withInterrupt } from "../interrupt.ts";
import { progressBar, type ProgressBar } from "../progress-bar.ts";
import { lockDestination } from "../destination-lock.ts";

/** Thrown when the status document names no such scenario, or it has nothing to recover. */
export class ScenarioUnavailableError extends CustodyError {
  constructor(volume: string, scenario: string, why: string) {
    super("scenario_unavailable", `scenario ${JSON.stringify(scenario)} of ${volume}: ${why}`, { volume, scenario });
  }
}

/** Thrown when fetches failed and what the others served does not reach the predicted cut. */
export class RecoveryShortError extends CustodyError {
  constructor(
    volume: string,
    predicted: Record<string, number>,
    recovered: Record<string, number>,
    fetchErrors: Record<string, string>,
    why?: string,
  ) {
    super(
      "recovery_short",
      `recovered ${volume} only through ${JSON.stringify(recovered)} of the predicted ` +
        `${JSON.stringify(predicted)}${why ? ` (${why})` : ""}; fetches failed: ` +
        Object.entries(fetchErrors)
          .map(([h, e]) => `${h} (${e})`)
          .join(", "),
      { volume, predicted, recovered, fetchErrors },
    );
  }
}

/** Parses `lane=seq,lane=seq`. */
function parseCut(v: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of v.split(",")) {
    const [lane, seq] = part.split("=");
    const n = Number(seq);
    if (!lane || !Number.isSafeInteger(n) || n < 0)
      throw new CustodyError("invalid_option", `--base-cut must be lane=seq[,lane=seq], got ${v}`, {
        option: "base-cut",
      });
    out[checkToken(lane, "lane")] = n;
  }
  return out;
}

/** The cut a recovery reads and where from. */
interface RecoveryPlan {
  readonly scenario: string;
  readonly cut: Record<string, number>;
  readonly contributors: string[];
}

/** "What survives now": no loss applied to the evaluation (the default without --scenario). */
const NOW: Scenario = { name: "surviving now", losses: [], deadlineSec: 0, required: false };

/** The operator's key for the recovery's holds: --operator-key, else operator.key beside --operator-config. */
function operatorKeyOf(o: OperatorKeyOptions & OperatorConnectionOptions): OperatorKeyOptions {
  if (o.operatorKey !== undefined || o.operatorConfig === undefined) return o;
  const beside = join(dirname(resolve(o.operatorConfig)), "operator.key");
  return existsSync(beside) ? { ...o, operatorKey: beside } : o;
}

/**
 * The plan from a computed evaluation: the named scenario's report, or what survives now. Throws
 * ScenarioUnavailableError.
 */
function planFrom(volume: string, s: LogStatus, scenario: string | undefined, to: string): RecoveryPlan {
  // Everything that survives now, planned for where it goes: a base already at `--to` wins (not one at
  // a recovery site that may be gone).
  const here = s.state.sites.some((x) => x.id === to) ? { ...NOW, destination: to } : NOW;
  const r =
    scenario === undefined ? evaluateScenario(s.state, here) : s.report.reports.find((x) => x.name === scenario);
  if (r === undefined)
    throw new ScenarioUnavailableError(volume, scenario!, `not among the volume's scenarios (${s.deployment.file})`);
  if (r.cut === null)
    throw new ScenarioUnavailableError(
      volume,
      r.name,
      `no cut survives it (holders heard: ${s.heard.join(",") || "none"})`,
    );
  return { scenario: r.name, cut: { ...r.cut }, contributors: [...r.contributors] };
}

type RecoverOptions = OutputOptions &
  WithoutControllerOptions &
  OperatorKeyOptions & {
    volume: string;
    scenario?: string;
    to?: string;
    dir: string;
    blocks?: string;
    keyFile: string;
    base?: string;
    baseCut?: string;
    timeout: string;
    region?: string;
    leaseSec: string;
    controllerWait: string;
  };

/** What the build phases are called on the progress bar, and what they count. */
const PHASES: Record<BuildProgress["phase"], { label: string; unit: string }> = {
  allocate: { label: "allocate", unit: "bytes" },
  apply: { label: "apply", unit: "records" },
  verify: { label: "verify", unit: "blocks" },
};

/** The build's progress on the bar. */
const showBuild = (bar: ProgressBar) => (p: BuildProgress) =>
  bar.show({ label: PHASES[p.phase].label, unit: PHASES[p.phase].unit, done: p.done, total: p.total, bytes: p.bytes });

/**
 * Fetches every lane of the plan's cut from each contributor (each fetch interruptible), showing
 * sequences, units and bytes on the bar. A failed fetch is reported per holder, never taken for
 * "that holder has nothing".
 */
async function fetchPlanned(
  t: Parameters<typeof fetchUnits>[0],
  o: RecoverOptions,
  plan: RecoveryPlan,
  timeoutMs: number,
  signal: AbortSignal,
  bar: ProgressBar,
) {
  const units: TransportUnit[] = [];
  const fetched: Record<string, number> = {};
  const fetchErrors: Record<string, string> = {};
  for (const holder of plan.contributors) {
    for (const lane of Object.keys(plan.cut)) {
      const total = plan.cut[lane]!;
      let through = 0;
      let got = 0;
      let bytes = 0;
      const onPage = (page: readonly TransportUnit[]) => {
        for (const u of page) {
          through = Math.max(through, u.lastSeq);
          bytes += u.payload.byteLength;
        }
        got += page.length;
        bar.show({
          label: `fetch ${holder}/${lane}`,
          unit: "seqs",
          done: Math.min(through, total),
          total,
          bytes,
          extra: `${got} units`,
        });
      };
      try {
        const page = await interruptible(
          signal,
          fetchUnits(t, holder, o.volume, lane, RangeSet.of(0, total), timeoutMs, { onPage }),
        );
        fetched[holder] = (fetched[holder] ?? 0) + page.length;
        units.push(...page);
      } catch (err) {
        if (signal.aborted) throw err;
        const e = err as CustodyError;
        fetchErrors[holder] =
          `${e.code ?? "error"}: ${String((e.detail as { cause?: unknown } | undefined)?.cause ?? e.message)}`;
        bar.clear();
        cliIo().stderr(`custody recover: fetch from ${holder} (lane ${lane}) failed: ${fetchErrors[holder]}\n`);
      }
    }
  }
  return { units, fetched, fetchErrors };
}

/** Registers `custody recover --volume V [--to <site>] [--scenario S]`. */
export function register(program: Command): void {
  recoverCommand(program).action(action(runRecover));
}

/** The `recover` command and its options. */
function recoverCommand(program: Command): Command {
  return withOperatorKey(
    withoutController(
      withOperatorConnection(program.command("recover"))
        .description(
          "materialize a volume at a destination from a base plus the WAL ranges that survive now (or a named " +
            "scenario); verifies every digest, builds the volume staged (no file looks like a volume until it is " +
            "complete and read back) and shows progress on a terminal. Needs no controller: without one it reads " +
            "the control log and asks the holders itself",
        )
        .requiredOption("--volume <volume>", "volume id")
        .option(
          "--scenario <name>",
          "recover the cut that survives this scenario of the volume (default: everything that survives now)",
        )
        .option(
          "--to <site>",
          "destination site, one of the volume's sites (default: the scenario's own destination, else the " +
            "volume's recovery site)",
        )
        .requiredOption("--dir <path>", "destination directory of the new volume (must not hold a volume)")
        .option("--blocks <n>", "volume size in 4 KiB blocks (default: the volume's blockCount in its deployment)")
        .requiredOption(
          "--key-file <path>",
          "the volume's data key: custody init's data.key as it is (32 bytes), or 64 hex digits",
        )
        .option("--base <dir>", "base snapshot volume directory")
        .option("--base-cut <lane=seq,...>", "cut the base snapshot contains")
        .option(
          "--region <region>",
          "with a controller's document: register the read in this region's control log first (without a " +
            "controller the read is always registered, in the volume's control log)",
        )
        .option(
          "--lease-sec <n>",
          "how long the registration may outlive a recovery that dies (a controller then ends it)",
          "600",
        )
        .option(
          "--controller-wait <ms>",
          "with --scenario: how long to wait for a controller's status document before computing the cut without one",
          "2000",
        )
        .option("--timeout <ms>", "per-request timeout", "5000"),
    ),
  );
}

/** The recovery's settings from its options, checked before anything is connected or written. */
function recoverSettings(o: RecoverOptions) {
  checkToken(o.volume, "volume");
  const settings = {
    started: performance.now(),
    timeoutMs: positiveInt("timeout", o.timeout),
    leaseMs: positiveInt("lease-sec", o.leaseSec) * 1000,
    controllerWaitMs: positiveInt("controller-wait", o.controllerWait),
    evidenceMs: positiveInt("evidence-ms", o.evidenceMs),
    connectMs: positiveInt("connect-timeout", o.connectTimeout),
    logWaitMs: positiveInt("log-wait", o.logWait),
    dataKey: readDataKeyFile(o.keyFile),
  };
  if ((o.base === undefined) !== (o.baseCut === undefined))
    throw new CustodyError("invalid_option", "--base and --base-cut go together", { option: "base" });
  // Where it goes and how large it is come from the volume's deployment; the flags override.
  const deployment = volumeDeployment(o, o.volume);
  const target = recoveryTarget(deployment.topology, deployment.file, {
    to: o.to,
    blocks: o.blocks === undefined ? undefined : positiveInt("blocks", o.blocks),
    scenario: o.scenario,
  });
  if (existsSync(join(o.dir, VolumeFiles.header))) throw new VolumeExistsError(o.dir);
  return { ...settings, target };
}

type RecoverSettings = ReturnType<typeof recoverSettings>;

/** What a recovery holds while it runs, released at its end whatever happened. */
interface RecoverySession {
  readonly bar: ProgressBar;
  registration?: RecoveryRegistration;
  computed?: LogStatus;
  first?: Awaited<ReturnType<typeof connectFirst>>;
  /** The destination was staged: its partial files go unless the volume was sealed. */
  staged: boolean;
  sealed: boolean;
}

/** `custody recover`: plan the cut, stage the destination, fetch, build, print; a stop leaves no volume behind. */
async function runRecover(o: RecoverOptions): Promise<void> {
  const s = recoverSettings(o);
  const bar = progressBar();
  const stopped = (signal: NodeJS.Signals) =>
    new InterruptedError(
      signal,
      `custody recover of ${o.volume} stopped; its partial files were removed and nothing at ${o.dir} is a ` +
        `volume; run the same command again to start over`,
    );
  await withInterrupt(stopped, async (signal) => {
    const lock = lockDestination(o.dir);
    const session: RecoverySession = { bar, staged: false, sealed: false };
    try {
      const plan = await planRecovery(o, s, session, signal);
      // The destination's space is claimed before the holders are read: a recovery that cannot
      // write learns it first.
      session.staged = true;
      await stageRecoveryDestination(o.dir, s.target.blockCount, { signal, onProgress: showBuild(bar) });
      const built = await fetchAndBuild(o, s, plan, session.first!.transport, signal, bar);
      session.sealed = true;
      bar.clear();
      printRecovered(o, s, plan, built, session);
    } finally {
      await endSession(o, session);
      lock.release();
    }
  });
}

/**
 * The cut to recover: a controller's document for a named scenario when one answers in time, else
 * computed here from the control log and the holders. Either way the read is registered first.
 */
async function planRecovery(
  o: RecoverOptions,
  s: RecoverSettings,
  session: RecoverySession,
  signal: AbortSignal,
): Promise<RecoveryPlan> {
  const { connectMs, controllerWaitMs, evidenceMs, logWaitMs, leaseMs, target } = s;
  const first = await interruptible(
    signal,
    connectFirst(o, serverUrls(o), "custody-recover", connectMs),
    (c) => void c.transport.close(),
  );
  session.first = first;
  // A controller's document is a faster answer for a named scenario, never a dependency.
  const doc =
    o.scenario === undefined
      ? undefined
      : await interruptible(signal, nextStatus(first.transport, o.volume, controllerWaitMs)).catch((err: unknown) => {
          if (err instanceof StatusTimeoutError) return undefined;
          throw err;
        });
  if (doc !== undefined) {
    const sc = doc.scenarios.find((x) => x.name === o.scenario);
    if (sc === undefined) throw new ScenarioUnavailableError(o.volume, o.scenario!, "not in the status document");
    if (sc.cut === null) throw new ScenarioUnavailableError(o.volume, o.scenario!, "no cut survives it");
    const plan = { scenario: sc.name, cut: Object.fromEntries(sc.cut), contributors: sc.contributors };
    if (o.region !== undefined) {
      session.registration = await registerRecovery(first.url, o.region, {
        volume: o.volume,
        cut: plan.cut,
        sources: plan.contributors,
        leaseMs,
        by: `custody recover ${plan.scenario} -> ${target.site}`,
      });
    }
    return plan;
  }
  const reading = statusFromLogAndHolders(o, o.volume, { connectMs, evidenceMs, logWaitMs, first }).catch(
    (err: unknown) => {
      throw o.scenario === undefined ? err : noControllerAnd(err, controllerWaitMs);
    },
  );
  const computed = await interruptible(signal, reading, (late) => void late.close());
  session.computed = computed;
  const plan = planFrom(o.volume, computed, o.scenario, target.site);
  // Registered as the operator (signed on a signed log) before the first read: no source may
  // release what it reads.
  const who = operatorAccess(operatorKeyOf(o)).who;
  session.registration = await placeRecoveryHolds(computed.store, computed.follower, who, {
    volume: o.volume,
    cut: plan.cut,
    sources: plan.contributors,
    leaseMs,
    by: `custody recover ${plan.scenario} -> ${target.site}`,
  });
  if (!o.json) cliIo().stdout(noControllerLine(computed) + "\n");
  return plan;
}

/** Fetches the plan's units and builds the volume from them (and the base), sealed only when it reaches the plan. */
async function fetchAndBuild(
  o: RecoverOptions,
  s: RecoverSettings,
  plan: RecoveryPlan,
  t: Parameters<typeof fetchUnits>[0],
  signal: AbortSignal,
  bar: ProgressBar,
) {
  const predicted = plan.cut;
  const lanes = Object.keys(predicted);
  const { units, fetched, fetchErrors } = await fetchPlanned(t, o, plan, s.timeoutMs, signal, bar);
  const base = o.base !== undefined ? { dir: o.base, cut: parseCut(o.baseCut!) } : undefined;
  const failed = Object.keys(fetchErrors).length > 0;
  const r = await recoverVolume({
    volume: o.volume,
    dir: o.dir,
    blockCount: s.target.blockCount,
    lanes,
    dataKey: s.dataKey,
    units,
    base,
    upTo: predicted,
    staged: true,
    signal,
    onProgress: showBuild(bar),
    // Short of the prediction because a holder could not be read: refused before the volume is sealed.
    accept: (res) => {
      if (failed && lanes.some((l) => (res.cut[l] ?? 0) < predicted[l]!))
        throw new RecoveryShortError(o.volume, predicted, res.cut, fetchErrors);
    },
  }).catch((err: unknown) => {
    // A gap where a holder could not be read is that holder's failure, not missing custody.
    throw failed && !signal.aborted && !(err instanceof RecoveryShortError)
      ? new RecoveryShortError(o.volume, predicted, {}, fetchErrors, (err as Error).message)
      : err;
  });
  return { r, lanes, fetched, fetchErrors, unitBytes: units.reduce((n, u) => n + u.payload.byteLength, 0) };
}

/** The recovered volume: a row per lane, and without a controller what the command read itself. */
function printRecovered(
  o: RecoverOptions,
  s: RecoverSettings,
  plan: RecoveryPlan,
  { r, lanes, fetched, fetchErrors, unitBytes }: Awaited<ReturnType<typeof fetchAndBuild>>,
  { computed, registration }: RecoverySession,
): void {
  const { target } = s;
  const predicted = plan.cut;
  const without =
    computed === undefined
      ? {}
      : {
          controllerAnswered: false,
          controlSeq: computed.control.lastSeq,
          server: computed.url,
          holdersHeard: computed.heard,
          holdersAnswered: computed.answered,
          listenedMs: computed.listenedMs,
          holds: registration?.holdIds ?? [],
        };
  const out = {
    volume: o.volume,
    scenario: plan.scenario,
    destination: target.site,
    destinationFrom: target.siteFrom,
    dir: o.dir,
    blockCount: target.blockCount,
    blocksFrom: target.blocksFrom,
    predicted,
    recovered: r.cut,
    lsn: r.lsn,
    unitsVerified: r.unitsVerified,
    recordsApplied: r.recordsApplied,
    baseUsed: r.baseUsed,
    fetched,
    fetchErrors,
    unitBytes,
    elapsedMs: Math.round(performance.now() - s.started),
    ...without,
  };
  printResult(
    o,
    out,
    lanes.map((l) => ({ lane: l, predicted: predicted[l], recovered: r.cut[l] })),
    `recovered ${o.volume} at ${target.site} (${o.dir}, ${target.blockCount} blocks): lsn ${r.lsn}, ` +
      `${r.unitsVerified} units verified (${unitBytes} bytes), ${r.recordsApplied} records ` +
      `applied${r.baseUsed ? ", base used" : ""}`,
  );
}

/** Releases what the recovery held: its partial files when not sealed, its hold, its connections. */
async function endSession(o: RecoverOptions, session: RecoverySession): Promise<void> {
  session.bar.clear();
  // recoverVolume removes its partial files itself; a stop or failure between staging and the
  // build does it here.
  if (session.staged && !session.sealed) await discardStagedVolume(nodeFileLayer, o.dir).catch(() => undefined);
  await session.registration
    ?.end()
    .catch((err: unknown) =>
      cliIo().stderr(
        `custody recover: could not end the recovery's hold (a controller ends it at its lease; else ` +
          `custody hold end): ${String(err)}\n`,
      ),
    );
  await session.computed?.close();
  await session.first?.transport.close();
}
