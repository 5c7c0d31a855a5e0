import type { Command } from "commander";
import { action, printResult, type OutputOptions } from "../output.ts";
import { operatorConnectOptions, withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";
import { controlStreamName, initJetStreamControlLog } from "../../transport/index.ts";
import { ControlLogCompactor } from "../../custody/index.ts";
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
}

/**
 * `custody log init`: the explicit bootstrap of a region's control log. It is the only command
 * that creates the control stream; every reader (controller, holders, writers, the other CLI
 * commands) refuses a stream that does not exist instead of creating an empty one.
 */
export function register(program: Command): void {
  const log = program.command("log").description("A region's control log (JetStream stream)");
  withOperatorConnection(log.command("init").description("Create the region's control stream if it does not exist (the operator's bootstrap)"))
    .requiredOption("--region <name>", "control-log region")
    .option("--replicas <n>", "JetStream replicas of the stream (default 1 when it is created; an existing stream with other replicas is refused)")
    .option("--cluster <name>", "JetStream cluster the stream is placed on (a replicated log's control cluster, e.g. control-<region>)")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (o: LogInitOptions) => {
        const replicas = o.replicas === undefined ? undefined : Number(o.replicas);
        if (replicas !== undefined && (!Number.isSafeInteger(replicas) || replicas < 1)) throw new Error(`--replicas must be a positive integer, got ${o.replicas}`);
        const nc = await connectNats({ ...operatorConnectOptions(o, "custody-cli-log-init"), maxReconnectAttempts: 0 });
        try {
          const { log: store, created } = await initJetStreamControlLog(nc, { region: o.region, ...(replicas !== undefined ? { replicas } : {}), ...(o.cluster !== undefined ? { placementCluster: o.cluster } : {}) });
          const lastSeq = await store.lastSeq();
          await store.close();
          const out = { region: o.region, stream: controlStreamName(o.region), created, lastSeq };
          printResult(o, out, [out]);
        } finally {
          await closeNats(nc);
        }
      }),
    );
  // The operator's compaction (docs/custody.md, "Snapshots and compaction"): run it from a timer.
  withOperatorKey(withOperatorConnection(log.command("compact").description("Snapshot the region's control log (signed with the operator key) and purge every entry below the snapshot")))
    .requiredOption("--region <name>", "control-log region")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (o: LogCompactOptions) => {
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
