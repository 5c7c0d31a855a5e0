import { runCliCaptured } from "../../cli/index.ts";

/** What a failed command line left: its exit code and output (the shape a child process's failure has). */
export interface CustodyCliFailure extends Error {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs one `custody` command line in the test's own process (the program the executable runs,
 * without a process start per call) and resolves with its output; a non-zero exit rejects with a
 * CustodyCliFailure, as a child process would. Long-running commands (`custody run`) still belong
 * in their own processes; test/policies/policy-cli.test.ts checks that the executable prints and
 * exits exactly as this in-process run does.
 */
export async function custodyCli(args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  const r = await runCliCaptured(args);
  if (r.code !== 0) throw Object.assign(new Error(`custody ${args.join(" ")} exited with ${r.code}\n${r.stderr}`), r) as CustodyCliFailure;
  return { stdout: r.stdout, stderr: r.stderr };
}

/** `custodyCli`'s stdout alone: the operator's command line as deployment tests run it. */
export const custodyStdout = async (args: readonly string[]): Promise<string> => (await custodyCli(args)).stdout;
