import { Command, CommanderError } from "commander";
import { cliIo, withCliIo, type CliIo } from "./cli-io.ts";
import { failWith } from "./output.ts";
type Area = { register(program: Command): void };

/**
 * Each area's subcommands live in `cli/commands/<area>.ts` (a `register(program)` function). They
 * are loaded on demand: a run of one command loads only its area (a CLI that starts in a fraction
 * of the time is what scripts and cron checks call many times); help and unknown commands load all.
 */
const AREAS: readonly { readonly commands: readonly string[]; load(): Promise<Area> }[] = [
  { commands: ["evaluate", "place"], load: () => import("./commands/policy.ts") },
  { commands: ["volume"], load: () => import("./commands/volume.ts") },
  { commands: ["control", "receipts"], load: () => import("./commands/custody.ts") },
  { commands: ["status"], load: () => import("./commands/status.ts") },
  { commands: ["recover"], load: () => import("./commands/recover.ts") },
  { commands: ["trace"], load: () => import("./commands/trace.ts") },
  { commands: ["run"], load: () => import("./commands/run.ts") },
  { commands: ["holder"], load: () => import("./commands/holder.ts") },
  { commands: ["failover"], load: () => import("./commands/failover.ts") },
  { commands: ["ps"], load: () => import("./commands/ps.ts") },
  { commands: ["release"], load: () => import("./commands/release.ts") },
  { commands: ["size", "cost"], load: () => import("./commands/sizing.ts") },
  { commands: ["hold"], load: () => import("./commands/hold.ts") },
  { commands: ["admit"], load: () => import("./commands/admit.ts") },
  { commands: ["init", "bootstrap"], load: () => import("./commands/init.ts") },
  { commands: ["log"], load: () => import("./commands/log.ts") },
];

/**
 * Commander's usage error (`error: unknown option '--x'`, perhaps a second `(Did you mean …?)` line)
 * as one error line.
 */
function usageLine(s: string): string {
  return `${s
    .trim()
    .replace(/^error: /, "error [usage]: ")
    .replace(/\s*\n\s*/g, " ")}\n`;
}

/** The `custody` command with the areas `argv` needs (all of them for help or an unknown command). */
export async function buildProgram(argv: readonly string[] = process.argv): Promise<Command> {
  const program = new Command("custody")
    .description("Custody network for write-ahead logs: volumes, holders, receipts and survival reports")
    .version("0.1.0")
    .showHelpAfterError(false)
    .exitOverride()
    // Commander's own output (help, usage errors) goes where the run's output goes; a usage error
    // is one `error [usage]: …` line like every other failure.
    .configureOutput({
      writeOut: (s) => cliIo().stdout(s),
      writeErr: (s) => cliIo().stderr(s),
      outputError: (s, write) => write(usageLine(s)),
    });
  const first = argv.slice(2).find((a) => !a.startsWith("-"));
  const area = AREAS.find((a) => first !== undefined && a.commands.includes(first));
  for (const a of area !== undefined ? [area] : AREAS) (await a.load()).register(program);
  return program;
}

/**
 * Runs one `custody` command line (`args` without the program name) and resolves with its exit
 * code once the command has finished. Output goes to `io` (the process's streams by default).
 * Long-running commands (`custody run`, `custody status --watch`) end the process themselves and
 * belong on a shell, not here.
 */
export async function runCli(args: readonly string[], io?: CliIo): Promise<number> {
  let code = 0;
  const target = io ?? cliIo();
  const runIo: CliIo = {
    stdout: (s) => target.stdout(s),
    stderr: (s) => target.stderr(s),
    setExitCode: (c) => {
      code = c;
      if (io !== undefined) io.setExitCode(c);
    },
    stderrIsTerminal: () => target.stderrIsTerminal?.() ?? false,
    stdoutClosed: () => target.stdoutClosed?.() ?? false,
  };
  await withCliIo(runIo, async () => {
    const argv = ["node", "custody", ...args];
    try {
      await (await buildProgram(argv)).parseAsync(argv);
    } catch (err) {
      // --help and --version end through here with exit code 0; usage errors already printed one line.
      if (err instanceof CommanderError) runIo.setExitCode(err.exitCode);
      else failWith(err);
    }
  });
  return code;
}

/** Runs `args` and returns what it printed and its exit code (for programs that embed the CLI). */
export async function runCliCaptured(
  args: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: (s) => void (stdout += s),
    stderr: (s) => void (stderr += s),
    setExitCode: () => {},
  });
  return { code, stdout, stderr };
}
