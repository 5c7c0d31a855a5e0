import type { Command } from "commander";
import { action, printResult, type OutputOptions } from "../output.ts";
import {
  connectOperator,
  operatorConnectOptions,
  withOperatorConnection,
  type OperatorConnectionOptions,
} from "../operator-connection.ts";
import { controlStreamName, initJetStreamControlLog, openJetStreamControlLog } from "../../transport/index.ts";
import { ControlLogCompactor, ControlLogFollower } from "../../custody/index.ts";
import { CustodyError } from "../../core/index.ts";
import { runCompactionTimer } from "../compaction-timer.ts";
import { CustodyCliError } from "../cli-error.ts";
import { withOperatorLog } from "../operator-log.ts";
import { operatorAccess, withOperatorKey, type OperatorKeyOptions } from "../operator-signing.ts";
import { closeNats, connectNats } from "../../transport/index.ts";

interface LogInitOptions extends OutputOptions, OperatorConnectionOptions {
  region: string;
  replicas?: string;
  cluster?: string;
}

interface LogCompactOptions extends OutputOptions, OperatorConnectionOptions, OperatorKeyOptions {
  region: string;
  every?: string;
  minEntries: string;
}

/**
 * `custody log init`: the explicit bootstrap of a region's control log. It is the only command
 * that creates the control stream; every reader (controller, holders, writers, the other CLI
 * commands) refuses a stream that does not exist instead of creating an empty one.
 */
export function register(program: Command): void {
  const log = program.command("log").description("A region's control log (JetStream stream)");
  withOperatorConnection(
    log
      .command("init")
      .description("Create the region's control stream if it does not exist (the operator's bootstrap)"),
  )
    .requiredOption("--region <name>", "control-log region")
    .option(
      "--replicas <n>",
      "JetStream replicas of the stream (default 1 when it is created; an existing stream with other replicas " +
        "is refused)",
    )
    .option(
      "--cluster <name>",
      "JetStream cluster the stream is placed on (a replicated log's control cluster, e.g. control-<region>)",
    )
    .option("--json", "one JSON object on one line")
    .action(action(initLog));
  // The operator's compaction (docs/custody.md, "Snapshots and compaction"): once, or as a process of
  // its own with --every.
  withOperatorKey(
    withOperatorConnection(
      log
        .command("compact")
        .description(
          "Snapshot the region's control log (signed with the operator key) and purge every entry below the snapshot",
        ),
    ),
  )
    .requiredOption("--region <name>", "control-log region")
    .option(
      "--every <seconds>",
      "keep running: every N seconds, compact when --min-entries entries were committed since the newest " +
        "snapshot (ends on SIGTERM or SIGINT)",
    )
    .option("--min-entries <n>", "with --every: entries since the newest snapshot before the next one", "1000")
    .option("--json", "one JSON object on one line (with --every: one per compaction)")
    .action(
      action(async (o: LogCompactOptions) => {
        if (o.every !== undefined) return compactOnTimer(o);
        const out = await withOperatorLog(o, "custody-cli-log-compact", async ({ store, follower }) => {
          try {
            const r = await new ControlLogCompactor(store, follower, operatorAccess(o).who.signer).compact();
            return { region: o.region, stream: controlStreamName(o.region), ...r };
          } finally {
            await store.close();
          }
        });
        printResult(o, out, [out]);
      }),
    );
}

/** `custody log init`: creates the region's control stream when it is not there, prints its name and head. */
async function initLog(o: LogInitOptions): Promise<void> {
  const replicas = o.replicas === undefined ? undefined : Number(o.replicas);
  if (replicas !== undefined && (!Number.isSafeInteger(replicas) || replicas < 1))
    throw new CustodyCliError(`--replicas must be a positive integer, got ${o.replicas}`, { option: "replicas" });
  const nc = await connectOperator(o, "custody-cli-log-init");
  try {
    const { log: store, created } = await initJetStreamControlLog(nc, {
      region: o.region,
      ...(replicas !== undefined ? { replicas } : {}),
      ...(o.cluster !== undefined ? { placementCluster: o.cluster } : {}),
    });
    const lastSeq = await store.lastSeq();
    await store.close();
    const out = { region: o.region, stream: controlStreamName(o.region), created, lastSeq };
    printResult(o, out, [out]);
  } finally {
    await closeNats(nc);
  }
}

function positiveNumber(flag: string, text: string, integer: boolean): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isSafeInteger(n)))
    throw new CustodyCliError(`${flag} must be a positive ${integer ? "integer" : "number"}, got ${text}`, {
      option: flag.slice(2),
    });
  return n;
}

/**
 * `custody log compact --every S`: stays connected (reconnecting across server restarts) and
 * compacts on a timer until SIGTERM or SIGINT, printing one line per compaction and one warning
 * line per failed try.
 */
async function compactOnTimer(o: LogCompactOptions): Promise<void> {
  const everyMs = positiveNumber("--every", o.every!, false) * 1000;
  const minEntries = positiveNumber("--min-entries", o.minEntries, true);
  const access = operatorAccess(o);
  const nc = await connectNats({ ...operatorConnectOptions(o, "custody-log-compactor"), maxReconnectAttempts: -1 });
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  try {
    const store = await openJetStreamControlLog(nc, { region: o.region });
    const compactor = new ControlLogCompactor(
      store,
      new ControlLogFollower(store, undefined, access.trust),
      access.who.signer,
      minEntries,
    );
    const stream = controlStreamName(o.region);
    try {
      await runCompactionTimer(
        compactor,
        everyMs,
        {
          compacted: (r) => {
            const out = { region: o.region, stream, at: new Date().toISOString(), ...r };
            printResult(o, out, [out]);
          },
          failed: (err) =>
            process.stderr.write(
              `warning [${err instanceof CustodyError ? err.code : "compaction_failed"}]: ` +
                `${(err as Error).message}; trying again in ${everyMs / 1000} s\n`,
            ),
        },
        stop.signal,
      );
    } finally {
      await store.close();
    }
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    await closeNats(nc);
  }
}
