import type { Command } from "commander";
import { listProcesses, type ProcessStats } from "../../runtime/index.ts";
import { NatsTransport } from "../../transport/index.ts";
import { checkToken } from "../../protocol/index.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import { operatorConnectOptions, withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";
import { positiveInt } from "./status.ts";

/** The figures worth a column, per role (the rest stays in `--json`). */
const KEY_FIGURES: Readonly<Record<string, readonly string[]>> = {
  holder: ["retainedRamBytes", "retainedDiskBytes"],
  writer: ["head", "custodyLagSeqs", "custodyBacklogBytes"],
  controller: ["evaluations", "evalMsP99"],
  "base-builder": ["baseThroughSeq", "baseBytes"],
};

function row(s: ProcessStats): Record<string, unknown> {
  const figures = (KEY_FIGURES[s.role] ?? []).filter((k) => s.figures[k] !== undefined).map((k) => `${k}=${s.figures[k]}`);
  return {
    role: s.role,
    id: s.id,
    // A process a newer incarnation fenced serves nothing and is about to exit: never shown as healthy.
    inc: s.fencedBy !== undefined ? `${s.incarnation ?? ""} FENCED by ${s.fencedBy}` : (s.incarnation ?? ""),
    pid: s.pid,
    "up s": Math.round(s.uptimeMs / 1000),
    "rss MB": Math.round(s.rssBytes / 2 ** 20),
    "heap MB": Math.round(s.heapUsedBytes / 2 ** 20),
    "loop p99 ms": s.eventLoopP99Ms,
    figures: figures.join(" "),
  };
}

/** Registers `custody ps`: every running role process, found through the NATS services client (`custody-<role>` services). */
export function register(program: Command): void {
  withOperatorConnection(program
    .command("ps")
    .description("list the running role processes (holders, writers, controllers, base builders) with incarnation, uptime, memory and key figures"))
    .option("--role <role>", "only this role")
    .option("--wait <ms>", "how long to collect answers", "1000")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (o: OutputOptions & OperatorConnectionOptions & { role?: string; wait: string }) => {
        if (o.role !== undefined) checkToken(o.role, "role");
        const waitMs = positiveInt("wait", o.wait);
        const t = await NatsTransport.connect(operatorConnectOptions(o, "custody-ps"));
        try {
          const { stats, rejected } = await listProcesses(t.connection, { ...(o.role !== undefined ? { role: o.role } : {}), waitMs });
          printResult(o, { processes: stats, rejected }, stats.map(row), `${stats.length} process${stats.length === 1 ? "" : "es"}${rejected > 0 ? ` (${rejected} unreadable answer${rejected === 1 ? "" : "s"} ignored)` : ""}`);
        } finally {
          await t.close();
        }
      }),
    );
}
