import { dropOutputToClosedPipes, outputFlushed } from "./cli-io.ts";
import { runCli } from "./program.ts";

// The `custody` executable: one command line, the process's own streams, its exit code.
dropOutputToClosedPipes();
const code = await runCli(process.argv.slice(2));
// A command that has finished ends the process (long-running ones, `run` and `status --watch`,
// end it themselves): nothing a library may leave behind (a socket, a timer) keeps it alive.
await outputFlushed();
process.exit(code);
