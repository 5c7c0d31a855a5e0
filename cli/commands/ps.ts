import type { Command } from "commander";
import { listProcesses } from "../../actors/runtime/index.ts";
import { checkToken } from "../../transport/protocol/index.ts";
import { cliIo } from "../cli-io.ts";
import {
  controlLogOf,
  loggedRoles,
  mergeExpected,
  plannedRoles,
  readControlState,
  type ExpectedRole,
} from "../expected-roles.ts";
import { deploymentDir } from "../log-status.ts";
import { action, formatTable, type OutputOptions } from "../output.ts";
import {
  connectOperatorTransport,
  withOperatorConnection,
  type OperatorConnectionOptions,
} from "../operator-connection.ts";
import { psEntries, psRows, rolesOf } from "../process-table.ts";
import { positiveInt } from "./status.ts";

/** The roles the control log names, or why it could not be read. */
interface LoggedRoles {
  readonly roles: ExpectedRole[];
  readonly error?: string;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * Registers `custody ps`: every running role process, found through the NATS services client
 * (`custody-<role>` services), beside every role the deployment expects.
 */
export function register(program: Command): void {
  withOperatorConnection(
    program
      .command("ps")
      .description(
        "list the role processes (holders, writers, controllers, base builders) with their state — running, " +
          "FENCED, or ABSENT when the deployment (roles.json beside --operator-config) or its control log " +
          "expects one that does not answer — incarnation, uptime, memory and key figures",
      ),
  )
    .option("--role <role>", "only this role")
    .option("--wait <ms>", "how long to collect answers", "1000")
    .option("--json", "one JSON object on one line (raw figures)")
    .action(action(runPs));
}

type PsOptions = OutputOptions & OperatorConnectionOptions & { role?: string; wait: string };

/** Collects the processes' answers (and the control log's roles), sets them beside the expected roles, prints. */
async function runPs(o: PsOptions): Promise<void> {
  if (o.role !== undefined) checkToken(o.role, "role");
  const waitMs = positiveInt("wait", o.wait);
  const dir = deploymentDir(o);
  const planned = dir === undefined ? undefined : plannedRoles(dir);
  const log = dir === undefined ? undefined : controlLogOf(dir);
  const t = await connectOperatorTransport(o, "custody-ps");
  try {
    // The control log is read while the answers are collected; a log that cannot be read leaves
    // the plan alone to go by.
    const [{ stats, rejected }, logged] = await Promise.all([
      listProcesses(t.connection, { ...(o.role !== undefined ? { role: o.role } : {}), waitMs }),
      log === undefined ? undefined : readLoggedRoles(t.connection, log, waitMs),
    ]);
    const expected =
      planned === undefined
        ? undefined
        : mergeExpected(planned, logged?.roles ?? []).filter((e) => o.role === undefined || e.role === o.role);
    const entries = psEntries(stats, expected);
    const absent = entries.filter((e) => e.state === "ABSENT");
    const fenced = entries.filter((e) => e.state === "FENCED");
    const summary = {
      answered: stats.length,
      ...(expected !== undefined ? { expected: expected.filter((e) => e.logStatus !== "retired").length } : {}),
      absent: absent.map((e) => ({ role: e.role, id: e.id })),
      fenced: fenced.map((e) => ({ role: e.role, id: e.id })),
    };
    if (o.json === true) {
      cliIo().stdout(
        JSON.stringify({
          processes: stats,
          rejected,
          ...summary,
          entries: entries.map((e) => ({ role: e.role, id: e.id, state: e.state, note: e.note })),
          ...(dir !== undefined ? { deployment: dir } : {}),
          ...(logged?.error !== undefined ? { controlLogError: logged.error } : {}),
        }) + "\n",
      );
      return;
    }
    const head = [
      `${plural(stats.length, "process", "processes")} answered` +
        (summary.expected !== undefined ? ` of ${summary.expected} expected` : ""),
      `${absent.length} absent`,
      `${fenced.length} fenced`,
      ...(rejected > 0 ? [`${plural(rejected, "unreadable answer")} ignored`] : []),
    ].join(", ");
    cliIo().stdout(psText(head, entries, dir, log, logged));
  } finally {
    await t.close();
  }
}

/** The roles the control log admitted; a log that cannot be read gives none and says why. */
function readLoggedRoles(
  connection: Parameters<typeof readControlState>[0],
  log: NonNullable<ReturnType<typeof controlLogOf>>,
  waitMs: number,
): Promise<LoggedRoles> {
  return readControlState(connection, log, waitMs).then(
    (s): LoggedRoles => ({ roles: loggedRoles(s) }),
    (err: unknown): LoggedRoles => ({
      roles: [],
      error: `control log of ${log.region} not read: ${(err as Error).message}`,
    }),
  );
}

/** The text of `custody ps`: the summary and where it comes from, then a table per role. */
function psText(
  head: string,
  entries: ReturnType<typeof psEntries>,
  dir: string | undefined,
  log: ReturnType<typeof controlLogOf>,
  logged: LoggedRoles | undefined,
): string {
  const source =
    dir === undefined
      ? " (no deployment known: give --operator-config of a custody init output to list absent roles)"
      : ` (deployment ${dir}${log !== undefined && logged?.error === undefined ? `, control log ${log.region}` : ""})`;
  const lines = [head + source, ...(logged?.error !== undefined ? [logged.error] : [])];
  for (const role of rolesOf(entries))
    lines.push("", role, formatTable(psRows(entries.filter((e) => e.role === role))));
  return lines.join("\n") + "\n";
}
