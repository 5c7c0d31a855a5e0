import type { Command } from "commander";
import { failWith } from "../output.ts";
import { holderRoleSchema, readRoleConfig } from "../../runtime/role-config.ts";
import { ConnectionLostError, runHolder } from "../../runtime/run-holder.ts";

/** Exit code when the NATS connection closed for good (a supervisor should restart the process). */
export const EXIT_CONNECTION_LOST = 2;

/**
 * `custody run <role> --config FILE`: runs one role as this process. It prints one JSON line when
 * it serves (`{"ready":true,...}`), runs until SIGTERM or SIGINT, then stops and exits 0. A start
 * that fails (bad config, an incarnation that would be reused, NATS unreachable) prints one error
 * line and exits 1. When the NATS connection closes for good (reconnects exhausted) it prints one
 * error line and exits 2: it never runs deaf, a supervisor restarts it as a new incarnation.
 */
export function register(program: Command): void {
  const run = program.command("run").description("Run one role of the custody network as this process");
  run
    .command("holder")
    .description("Run a holder from its role config (stateDir, keyFile, controlRegion, nats, holder)")
    .requiredOption("--config <file>", "role configuration (JSON)")
    .action(async (o: { config: string }) => {
      try {
        const cfg = readRoleConfig(o.config, holderRoleSchema);
        const r = await runHolder(cfg);
        process.stdout.write(JSON.stringify({ ready: true, role: "holder", holderId: r.holder.id, incarnation: r.holder.incarnation, pid: process.pid }) + "\n");
        const ended = await new Promise<"signal" | "lost">((resolve) => {
          process.once("SIGTERM", () => resolve("signal"));
          process.once("SIGINT", () => resolve("signal"));
          void r.lost.then(() => resolve("lost"));
        });
        if (ended === "lost") {
          failWith(new ConnectionLostError("holder"));
          process.exit(EXIT_CONNECTION_LOST);
        }
        await r.stop();
        process.exit(0);
      } catch (err) {
        failWith(err);
        process.exit(1);
      }
    });
}
