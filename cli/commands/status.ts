import type { Command } from "commander";
import { volumeStatusSpec, type VolumeStatus } from "../../transport/protocol/index.ts";
import { CustodyError } from "../../core/index.ts";
import type { NatsTransport } from "../../transport/index.ts";
import { checkToken, statusSubject } from "../../transport/protocol/index.ts";
import { decodeMessage } from "../../transport/protocol/index.ts";
import { withOperatorConnection } from "../operator-connection.ts";
import {
  connectFirst,
  noControllerLine,
  serverUrls,
  statusFromLogAndHolders,
  type LogStatus,
  type LogStatusOptions,
} from "../log-status.ts";
import { action, consistentBy, contributorsText, printResult, type OutputOptions } from "../output.ts";
import { cliIo } from "../cli-io.ts";

/** Thrown when no status document for the volume arrives in time. */
export class StatusTimeoutError extends CustodyError {
  constructor(volume: string, timeoutMs: number) {
    super("status_timeout", `no status document for ${volume} within ${timeoutMs} ms (is its controller running?)`, {
      volume,
      timeoutMs,
    });
  }
}

/** Waits for the next status document of `volume` on `custody.v1.status.<volume>`. Throws StatusTimeoutError. */
export async function nextStatus(t: NatsTransport, volume: string, timeoutMs: number): Promise<VolumeStatus> {
  return new Promise<VolumeStatus>((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new StatusTimeoutError(volume, timeoutMs));
    }, timeoutMs);
    const sub = t.subscribe(statusSubject(volume), (m) => {
      try {
        const doc = decodeMessage(volumeStatusSpec, m.data);
        clearTimeout(timer);
        sub.unsubscribe();
        resolve(doc);
      } catch {
        // a malformed document is skipped; the next one may be good
      }
    });
  });
}

const cutText = (c: [string, number][] | null) => (c === null ? "none" : c.map(([l, s]) => `${l}:${s}`).join(","));

/** Positive integer option parser (typed error naming the option). */
export function positiveInt(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new CustodyError("invalid_option", `--${name} must be a positive integer, got ${v}`, {
      option: name,
      value: v,
    });
  return n;
}

/** Prints one status document as a table (or one JSON line, with `extra` fields). */
function printStatus(doc: VolumeStatus, o: OutputOptions, extra: Record<string, unknown> = {}): void {
  const rows = doc.scenarios.map((s) => ({
    scenario: s.name,
    kind: s.required ? "required" : s.kind === "timeline" ? "timeline" : "optional",
    cut: cutText(s.cut),
    // In flight: writes within their receipt deadline; lost: those past it. "At risk" is everything
    // the scenario would lose this instant, in flight included (a document that does not split says lost).
    "in flight": s.inFlightSeqs ?? "-",
    lost: s.overdueSeqs ?? s.lostSeqs,
    "at risk bytes": s.lostBytes,
    "oldest at risk": `${(s.oldestLostAgeMs / 1000).toFixed(1)}s`,
    rto: s.rtoSec === null ? "unbounded" : `${s.rtoSec.toFixed(0)}s`,
    deadline: `${s.deadlineSec}s`,
    evidence: s.evidence,
    stream: s.stream ?? "raw", // absent: the raw log (documents before issue #22 never name it)
    contributors: contributorsText(
      s.contributors,
      Object.fromEntries((doc.audits ?? []).map((a) => [a.holder, a.state])),
    ),
    "consistent by": consistentBy(s.cut?.length ?? 0, s.manifest, s.base),
    flags: s.flags.join(",") || "-",
    verdict:
      s.verdict === undefined
        ? s.meetsDeadline
          ? "deadline met"
          : "DEADLINE MISSED"
        : s.verdict === "met"
          ? "met"
          : `NOT MET: ${(s.reasons ?? []).join("; ")}`,
  }));
  const fresh = doc.evidence
    .map((e) => `${e.holder}:${e.ageMs < 0 ? "none" : `${e.ageMs}ms`}${e.stale ? "(stale)" : ""}`)
    .join(" ");
  printResult(
    o,
    { ...doc, ...extra },
    rows,
    `volume ${doc.volume}  acknowledged ${cutText(doc.acknowledged)}  surviving ${cutText(doc.survivingCut)}  ` +
      `control seq ${doc.controlSeq}  releases ${doc.releasesCommitted}\nevidence ` +
      `${fresh}${fencedText(doc)}${spendText(doc)}${auditText(doc)}`,
  );
}

/**
 * The fenced line of the table header: superseded holder incarnations that still send receipts
 * (issue #46), e.g. `FENCED h-e2#2 (admitted #3) still speaking, last 120ms ago, 14 batches`.
 */
function fencedText(doc: VolumeStatus): string {
  if (doc.fenced === undefined || doc.fenced.length === 0) return "";
  const speaking = doc.fenced.map(
    (f) =>
      `${f.holder}#${f.incarnation} (admitted #${f.admitted}) still speaking, ` +
      `last ${f.lastSeenAgeMs}ms ago, ${f.batches} batch${f.batches === 1 ? "" : "es"}`,
  );
  return `\nFENCED ${speaking.join("  ")}: stop that process (its receipts count for nothing)`;
}

/**
 * The retention-audit line of the table header: per holder, state, passed/failed/late counts and the
 * last audit's age.
 */
function auditText(doc: VolumeStatus): string {
  if (doc.audits === undefined) return "";
  const age = (at: number | null) => (at === null ? "never" : `${Math.max(0, doc.asOfMs - at)}ms ago`);
  const state = (a: (typeof doc.audits)[number]) => (a.state === "failed" ? "FAILED(unproven)" : a.state);
  const audits = doc.audits.map(
    (a) => `${a.holder}:${state(a)} ${a.passed}/${a.failed}/${a.timedOut} ${age(a.lastAuditAtMs)}`,
  );
  return `\naudits ${audits.join("  ")}`;
}

/** The spend lines of the table header: ceiling, projection, budgets, optional work refused. */
function spendText(doc: VolumeStatus): string {
  const s = doc.spend;
  if (s === undefined) return "";
  const usd = (n: number) => `$${n < 0.01 && n > 0 ? n.toExponential(2) : n.toFixed(2)}`;
  const budgets = s.budgets.map((b) => `${b.kind} ${usd(b.spentUsd)}/${usd(b.budgetUsd)}`).join("  ");
  const lines = [
    `spend ceiling ${usd(s.ceilingUsd)}/month  ` +
      `projected ${usd(s.projectedUsd)}${s.overCeiling ? " (OVER CEILING: required work still runs)" : ""}  ` +
      `optional refused ${s.refusedOptional}`,
    `budgets ${budgets}`,
  ];
  for (const d of s.deferred)
    lines.push(`deferred optional copy ${d.lane}:${d.seqs} -> ${d.target} (${d.scenarios.join(", ")}): ${d.reason}`);
  return `\n${lines.join("\n")}`;
}

/** `err` (from computing the status without a controller) said after "no controller answered": same code, one line. */
export function noControllerAnd(err: unknown, timeoutMs: number): unknown {
  if (!(err instanceof CustodyError)) return err;
  return new CustodyError(
    err.code,
    `no controller answered within ${timeoutMs} ms, and the command could not compute the status itself: ` +
      `${err.message}`,
    err.detail as Record<string, unknown>,
  );
}

/** Options of the commands that answer without a controller when none does. */
export interface WithoutControllerOptions extends LogStatusOptions {
  evidenceMs: string;
  connectTimeout: string;
  logWait: string;
}

/**
 * Adds `--controller-config`, `--evidence-ms`, `--log-wait` and `--json` to a command
 * (`--connect-timeout` comes with the connection options).
 */
export function withoutController(c: Command): Command {
  return c
    .option(
      "--controller-config <file>",
      "the volume's controller role config, for its topology when no controller answers (default: found " +
        "through the deployment's roles.json beside --operator-config)",
    )
    .option(
      "--evidence-ms <ms>",
      "when no controller answers: at most this long listening to the holders' signed receipts (it ends once " +
        "every admitted holder was heard)",
      "3000",
    )
    .option(
      "--log-wait <ms>",
      "when no controller answers: how long to keep trying the servers for the control log (a region just lost " +
        "may leave JetStream electing a leader)",
      "15000",
    )
    .option("--json", "one JSON object on one line");
}

/** Registers `custody status <volume>`. */
export function register(program: Command): void {
  withoutController(
    withOperatorConnection(
      program
        .command("status <volume>")
        .description(
          "print a volume's status: coverage per scenario, surviving cut, RPO, RTO, evidence freshness — its " +
            "controller's document, or, when no controller answers, computed here from the control log and the " +
            "holders' receipts",
        ),
    )
      .option(
        "--timeout <ms>",
        "how long to wait for a controller's document before computing the status without one",
        "5000",
      )
      .option("--watch", "keep redrawing as new documents arrive, until Ctrl-C")
      .option("--every <ms>", "with --watch, at most one redraw per this many ms", "1000"),
  ).action(action(runStatus));
}

type StatusOptions = OutputOptions & WithoutControllerOptions & { timeout: string; watch?: boolean; every: string };

/**
 * Prints the volume's status: its controller's document, else one computed here. --watch: redraw
 * on each document (at most every --every ms) until Ctrl-C; without a controller each redraw is
 * computed here again.
 */
async function runStatus(volume: string, o: StatusOptions): Promise<void> {
  checkToken(volume, "volume");
  const timeoutMs = positiveInt("timeout", o.timeout);
  const everyMs = positiveInt("every", o.every);
  const evidenceMs = positiveInt("evidence-ms", o.evidenceMs);
  const connectMs = positiveInt("connect-timeout", o.connectTimeout);
  const logWaitMs = positiveInt("log-wait", o.logWait);
  const first = await connectFirst(o, serverUrls(o), "custody-status", connectMs);
  const t = first.transport;
  const stop = () => void t.close().finally(() => process.exit(0));
  if (o.watch) process.once("SIGINT", stop).once("SIGTERM", stop);
  try {
    for (;;) {
      const doc = await nextStatus(t, volume, timeoutMs).catch(async (err: unknown) => {
        if (!(err instanceof StatusTimeoutError)) throw err;
        const computed = await statusFromLogAndHolders(o, volume, { connectMs, evidenceMs, logWaitMs, first }).catch(
          (e: unknown) => {
            throw noControllerAnd(e, timeoutMs);
          },
        );
        await computed.close();
        return computed;
      });
      if (o.watch && !o.json && process.stdout.isTTY) cliIo().stdout("\x1b[2J\x1b[H");
      if ("doc" in doc) printComputed(doc, o);
      else printStatus(doc, o);
      if (!o.watch || cliIo().stdoutClosed?.() === true) break;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  } finally {
    await t.close();
  }
}

/** A status computed here: the line that says so, then the document with what it was computed from. */
function printComputed(s: LogStatus, o: OutputOptions): void {
  if (!o.json) cliIo().stdout(noControllerLine(s) + "\n");
  printStatus(s.doc, o, {
    controllerAnswered: false,
    computedFrom: {
      controlSeq: s.control.lastSeq,
      server: s.url,
      holders: s.heard,
      holdersAnswered: s.answered,
      listenedMs: s.listenedMs,
      rejectedBatches: s.rejected,
    },
  });
}
