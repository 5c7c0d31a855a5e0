/**
 * Public surface of `cli/`: the `custody` command run inside another program (tests, through the
 * test kit's `custodyCli`), its output and exit code captured. Tools and the simulator do not import
 * the CLI: what they share with it lives in `core/` (tables, error lines) and `actors/runtime/`.
 */
export { failWith, formatTable } from "./output.ts";
export { runCli, runCliCaptured } from "./program.ts";
