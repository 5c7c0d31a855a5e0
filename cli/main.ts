import { Command, CommanderError } from "commander";
import { failWith } from "./output.ts";
import { register as registerPolicy } from "./commands/policy.ts";
import { register as registerVolume } from "./commands/volume.ts";
import { register as registerCustody } from "./commands/custody.ts";
import { register as registerStatus } from "./commands/status.ts";
import { register as registerRecover } from "./commands/recover.ts";
import { register as registerTrace } from "./commands/trace.ts";
import { register as registerRun } from "./commands/run.ts";
import { register as registerHolder } from "./commands/holder.ts";
import { register as registerPs } from "./commands/ps.ts";
import { register as registerRelease } from "./commands/release.ts";
import { register as registerSizing } from "./commands/sizing.ts";
import { register as registerHold } from "./commands/hold.ts";
import { register as registerAdmit } from "./commands/admit.ts";
import { register as registerInit } from "./commands/init.ts";
import { register as registerLog } from "./commands/log.ts";

/**
 * The `custody` command. Each area registers its subcommands from `cli/commands/<area>.ts`
 * (a `register(program)` function), so this file only lists them.
 */
export function buildProgram(): Command {
  const program = new Command("custody")
    .description("Custody network for write-ahead logs: volumes, holders, receipts and survival reports")
    .version("0.1.0")
    .showHelpAfterError(false)
    .exitOverride();
  registerPolicy(program);
  registerVolume(program);
  registerCustody(program);
  registerStatus(program);
  registerRecover(program);
  registerTrace(program);
  registerRun(program);
  registerHolder(program);
  registerPs(program);
  registerRelease(program);
  registerSizing(program);
  registerHold(program);
  registerAdmit(program);
  registerInit(program);
  registerLog(program);
  return program;
}

const program = buildProgram();
try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version end through here with exit code 0; usage errors already printed one line.
    process.exitCode = err.exitCode;
  } else failWith(err);
}
