/** Public surface of `cli/`: what the simulator, benches and harnesses reuse of the `custody` command. */
export { readOperatorConfig } from "./operator-connection.ts";
export { failWith, formatTable } from "./output.ts";
export { runCli, runCliCaptured } from "./program.ts";
