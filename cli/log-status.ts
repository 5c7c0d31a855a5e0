import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  evaluateFromLog,
  failedHolders,
  gatherHolderEvidence,
  statusDocument,
  type ControllerConfig,
  type VolumeTopology,
} from "../actors/index.ts";
import { DEFAULT_VERDICT_TIMING, steadyVerdicts } from "../policies/index.ts";
import { CustodyError, holderLaneKey, systemClock } from "../core/index.ts";
import { ControlLogFollower, type ControlState, type ControlTrust } from "../custody/index.ts";
import type { EvaluationReport, EvaluationState } from "../policies/index.ts";
import type { VolumeStatus } from "../transport/protocol/index.ts";
import {
  controllerRoleSchema,
  listProcesses,
  readPublicKeyHex,
  readRoleConfig,
  type ProcessStats,
} from "../actors/runtime/index.ts";
import { NatsConnectError, openJetStreamControlLog, type NatsTransport } from "../transport/index.ts";
import {
  connectOperatorTransport,
  DEFAULT_SERVER,
  readOperatorConfigOption,
  type OperatorConnectionOptions,
} from "./operator-connection.ts";

/**
 * Status and recovery without a controller: the volume's topology from the deployment's files (the
 * controller's role config `custody init` wrote), the control log from the first region whose
 * server answers and serves it, and what survives from the holders' own signed receipts — then the
 * controller's own evaluation (`evaluateFromLog`). A status document, when a controller publishes
 * one, is only a faster answer; nothing here depends on it.
 */

/** How long the holders' stats answers are collected (bounded by --evidence-ms too). */
const STATS_WAIT_MS = 1_000;

/** Pause between two passes over the servers while none serves the control log. */
const LOG_RETRY_MS = 500;

/** Thrown when no server of the deployment answered (or none served the control log) in time. */
export class NoServerAnsweredError extends CustodyError {
  constructor(what: string, failures: readonly { url: string; why: string }[]) {
    super("no_server", `${what}: ${failures.map((f) => `${f.url} (${f.why})`).join(", ")}`, {
      urls: failures.map((f) => f.url),
    });
  }
}

/** Thrown when no controller config of the volume names its topology. */
export class NoTopologyError extends CustodyError {
  constructor(volume: string, where: string) {
    super(
      "no_topology",
      `no controller config of ${volume} in ${where}: give --controller-config <file> (custody init wrote ` +
        `roles/controller-<id>/config.json)`,
      { volume, where },
    );
  }
}

/** Connection options plus the deployment's controller config, when given. */
export interface LogStatusOptions extends OperatorConnectionOptions {
  controllerConfig?: string;
}

/** The deployment folder an operator config sits in (`<out>/operator/nats.json`), when it has one. */
export function deploymentDir(o: LogStatusOptions): string | undefined {
  if (o.operatorConfig === undefined) return undefined;
  const out = dirname(dirname(resolve(o.operatorConfig)));
  return existsSync(join(out, "roles.json")) ? out : undefined;
}

/**
 * The server URLs to try, in order: `--server` (comma-separated), else the operator config's,
 * then every region's server of the deployment (`roles.json` beside the operator config); without
 * any, the default server. Duplicates are dropped.
 */
export function serverUrls(o: LogStatusOptions): string[] {
  const urls: string[] = [];
  if (o.server !== undefined) urls.push(...o.server.split(","));
  else if (o.operatorConfig !== undefined) urls.push(...[readOperatorConfigOption(o.operatorConfig).servers].flat());
  const out = deploymentDir(o);
  if (out !== undefined) {
    try {
      const index = JSON.parse(readFileSync(join(out, "roles.json"), "utf8")) as { natsServers?: { url?: unknown }[] };
      for (const s of index.natsServers ?? []) if (typeof s.url === "string") urls.push(s.url);
    } catch {
      // an unreadable index adds no URL; the operator config's still stand
    }
  }
  if (urls.length === 0) urls.push(DEFAULT_SERVER);
  return [...new Set(urls.map((u) => u.trim()).filter((u) => u.length > 0))];
}

/** What a controller config says about its volume: topology, control-log region, whom the log's readers trust. */
export interface VolumeDeployment {
  readonly topology: VolumeTopology;
  readonly region: string;
  readonly trust?: ControlTrust;
  readonly file: string;
  /** The controller's receipt deadline (its `verdict` settings; default DEFAULT_VERDICT_TIMING's). */
  readonly receiptDeadlineMs: number;
}

/**
 * The controller config of `volume`: `--controller-config`, else the controller roles in the
 * deployment's `roles.json` beside the operator config. Throws NoTopologyError.
 */
export function volumeDeployment(o: LogStatusOptions, volume: string): VolumeDeployment {
  const files: string[] = [];
  if (o.controllerConfig !== undefined) files.push(o.controllerConfig);
  else {
    const out = deploymentDir(o);
    if (out === undefined)
      throw new NoTopologyError(
        volume,
        o.operatorConfig === undefined
          ? "(no --operator-config to find the deployment by)"
          : `no roles.json beside ${o.operatorConfig}`,
      );
    const index = JSON.parse(readFileSync(join(out, "roles.json"), "utf8")) as {
      roles?: { role?: unknown; config?: unknown }[];
    };
    for (const r of index.roles ?? [])
      if (r.role === "controller" && typeof r.config === "string") files.push(r.config);
  }
  for (const file of files) {
    const cfg = readRoleConfig(file, controllerRoleSchema);
    const c = cfg.controller as unknown as Pick<ControllerConfig, "region" | "topology" | "verdict">;
    if (c.topology.volume !== volume) continue;
    const operators = cfg.controlTrust?.operators;
    const trust =
      operators === undefined
        ? undefined
        : { operators: Object.fromEntries(operators.map((op) => [op.id, readPublicKeyHex(op.publicKeyFile)])) };
    const receiptDeadlineMs = c.verdict?.receiptDeadlineMs ?? DEFAULT_VERDICT_TIMING.receiptDeadlineMs;
    return {
      topology: c.topology,
      region: cfg.controlLogRegion ?? c.region,
      ...(trust !== undefined ? { trust } : {}),
      file,
      receiptDeadlineMs,
    };
  }
  throw new NoTopologyError(volume, files.join(", ") || "the deployment's roles.json (it lists no controller)");
}

/**
 * Connects to the first of `urls` that answers within `connectMs` (no reconnects: a command fails
 * rather than waits). Throws NoServerAnsweredError naming every URL tried and why.
 */
export async function connectFirst(
  o: OperatorConnectionOptions,
  urls: readonly string[],
  name: string,
  connectMs: number,
): Promise<{ transport: NatsTransport; url: string }> {
  const failures: { url: string; why: string }[] = [];
  for (const url of urls) {
    try {
      return { transport: await connectOne(o, url, name, connectMs), url };
    } catch (err) {
      failures.push({ url, why: connectFailure(err) });
    }
  }
  throw new NoServerAnsweredError(`no server answered within ${connectMs} ms`, failures);
}

/** One connection to `url` as the operator, bounded by `connectMs`, without reconnects. */
function connectOne(
  o: OperatorConnectionOptions,
  url: string,
  name: string,
  connectMs: number,
): Promise<NatsTransport> {
  return connectOperatorTransport({ ...o, server: url, connectTimeout: String(connectMs) }, name);
}

/** Why a connect to a URL failed, said after that URL (a NatsConnectError's reason already follows its URL). */
function connectFailure(err: unknown): string {
  return err instanceof NatsConnectError ? err.reason : err instanceof Error ? err.message : String(err);
}

/** A status computed by the command itself, and what it was computed from. */
export interface LogStatus {
  readonly doc: VolumeStatus;
  readonly state: EvaluationState;
  readonly report: EvaluationReport;
  readonly control: ControlState;
  /** Holders a verified receipt batch came from. */
  readonly heard: string[];
  /** The volume's holders that answered the stats request (alive, whatever they retain). */
  readonly answered: string[];
  readonly listenedMs: number;
  readonly rejected: Record<string, number>;
  /** The server whose region served the control log. */
  readonly url: string;
  readonly deployment: VolumeDeployment;
  /** The control log as read (open until `close`), for the recovery's holds. */
  readonly store: Awaited<ReturnType<typeof openJetStreamControlLog>>;
  readonly follower: ControlLogFollower;
  readonly transport: NatsTransport;
  close(): Promise<void>;
}

/**
 * Computes `volume`'s status as its controller would, without one: for each server in turn (the
 * already-open `first` connection for its URL), read the control log and listen to the holders'
 * receipts for up to `evidenceMs`; the first server that serves the log answers. Passes are
 * repeated for up to `logWaitMs`; then throws NoServerAnsweredError naming every URL and why.
 */
export async function statusFromLogAndHolders(
  o: LogStatusOptions,
  volume: string,
  q: {
    readonly connectMs: number;
    readonly evidenceMs: number;
    readonly logWaitMs: number;
    readonly first?: { transport: NatsTransport; url: string };
  },
): Promise<LogStatus> {
  const deployment = volumeDeployment(o, volume);
  const started = performance.now();
  // Right after a region is lost, the survivors' JetStream may still be electing a leader: the
  // servers are tried again, round after round, until one serves the log or logWaitMs has passed.
  for (let round = 1; ; round++) {
    const { status, failures } = await oneRound(o, volume, deployment, q);
    if (status !== undefined) return status;
    const waited = Math.round(performance.now() - started);
    if (waited + LOG_RETRY_MS >= q.logWaitMs) {
      throw new NoServerAnsweredError(
        `no server served the control log of ${volume} (region ${deployment.region}, from ${deployment.file}) ` +
          `in ${round} round${round === 1 ? "" : "s"} over ${waited} ms`,
        failures,
      );
    }
    await new Promise((r) => setTimeout(r, LOG_RETRY_MS));
  }
}

/** One pass over the servers: the first that serves the log answers; else why each did not. */
async function oneRound(
  o: LogStatusOptions,
  volume: string,
  deployment: VolumeDeployment,
  q: {
    readonly connectMs: number;
    readonly evidenceMs: number;
    readonly first?: { transport: NatsTransport; url: string };
  },
): Promise<{ status?: LogStatus; failures: { url: string; why: string }[] }> {
  const failures: { url: string; why: string }[] = [];
  for (const url of serverUrls(o)) {
    let transport: NatsTransport;
    const reused = q.first !== undefined && q.first.url === url;
    try {
      transport = reused ? q.first!.transport : await connectOne(o, url, "custody-log-status", q.connectMs);
    } catch (err) {
      failures.push({ url, why: connectFailure(err) });
      continue;
    }
    let store: Awaited<ReturnType<typeof openJetStreamControlLog>> | undefined;
    try {
      store = await openJetStreamControlLog(transport.connection, {
        region: deployment.region,
        timeoutMs: q.connectMs,
      });
      const log = store;
      const follower = new ControlLogFollower(store, undefined, deployment.trust);
      const control = await follower.refresh();
      const { doc, state, report, heard, answered, listenedMs, rejected } = await evaluateHere(
        transport,
        control,
        volume,
        deployment,
        q.evidenceMs,
      );
      const status: LogStatus = {
        doc,
        state,
        report,
        control,
        heard,
        answered,
        listenedMs,
        rejected,
        url,
        deployment,
        store: log,
        follower,
        transport,
        close: async () => {
          await log.close();
          if (!reused) await transport.close();
        },
      };
      return { status, failures };
    } catch (err) {
      // The control log's own errors already start with `control log <region>`.
      const message = (err as Error).message ?? String(err);
      const what = message.startsWith(`control log ${deployment.region}`)
        ? message
        : `control log ${deployment.region}: ${message}`;
      failures.push({ url, why: err instanceof CustodyError ? `${err.code}: ${what}` : what });
      await store?.close().catch(() => undefined);
      if (!reused) await transport.close().catch(() => undefined);
    }
  }
  return { failures };
}

/**
 * The volume's status computed here from the control log's state and what the holders say: their
 * signed receipts (the evidence) and their process stats.
 */
async function evaluateHere(
  transport: NatsTransport,
  control: ControlState,
  volume: string,
  deployment: VolumeDeployment,
  evidenceMs: number,
) {
  const t = deployment.topology;
  // Listening ends early once every admitted holder the log has not declared failed was heard.
  const failed = failedHolders(control);
  const expect = Object.keys(t.holderSites).filter((h) => control.holders[h] !== undefined && !failed.has(h));
  // The holders are asked too (their process stats): one that retains nothing of the volume sends
  // no receipt, so it is not waited for. Only verified receipts count as evidence.
  const asked = listProcesses(transport.connection, {
    role: "holder",
    waitMs: Math.min(evidenceMs, STATS_WAIT_MS),
  }).then(
    (r) => r.stats,
    () => [],
  );
  const retainsNothing = (p: ProcessStats) =>
    t.lanes.every((l) => (p.samples?.[`${holderLaneKey(volume, l)}.retained`]?.length ?? 0) === 0);
  const excused = asked.then((stats) =>
    stats.filter((p) => expect.includes(p.id) && retainsNothing(p)).map((p) => p.id),
  );
  const ev = await gatherHolderEvidence(transport, control, {
    volume,
    lanes: t.lanes,
    expect,
    excused,
    waitMs: evidenceMs,
    staleAfterMs: t.staleAfterMs,
    clock: systemClock,
  });
  const answered = (await asked).filter((p) => p.id in t.holderSites).map((p) => p.id);
  const { state, report } = evaluateFromLog(t, control, ev.holdings, ev.progress, systemClock.now());
  // One look cannot tell how long a loss has lasted: writes past their receipt deadline count at once (no grace).
  const steady = steadyVerdicts(state, report, { receiptDeadlineMs: deployment.receiptDeadlineMs, graceMs: 0 }, {});
  const doc = statusDocument("none", control.lastSeq, state, { ...report, reports: steady.reports }, 0);
  return {
    doc,
    state,
    report,
    heard: ev.heard,
    answered,
    listenedMs: ev.listenedMs,
    rejected: ev.rejected,
  };
}

/** The one line that says the status was computed here, not by a controller. */
export function noControllerLine(s: Pick<LogStatus, "heard" | "answered" | "listenedMs" | "url" | "control">): string {
  const n = s.heard.length;
  return (
    `controller: none answered (status computed by this command from the control log at seq ${s.control.lastSeq} ` +
    `via ${s.url} and ${n} ${n === 1 ? "holder's" : "holders'"} receipts: ${s.heard.join(",") || "none"}; ` +
    `${s.answered.length} holder${s.answered.length === 1 ? "" : "s"} answered stats; listened ${s.listenedMs} ms)`
  );
}
