import { runCli } from "./program.ts";

// The `custody` executable: one command line, the process's own streams, its exit code.
process.exitCode = await runCli(process.argv.slice(2));
