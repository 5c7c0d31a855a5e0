import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Where a CLI run writes and how it ends. A command prints through `cliIo()` instead of the
 * process's streams, so `runCli` can run commands inside another program (scripts, tests) with
 * their output and exit code captured per run — concurrent runs stay apart.
 */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** The exit code the run ends with (the last one set wins, as with `process.exitCode`). */
  setExitCode(code: number): void;
  /** Whether `stderr` reaches a terminal (a progress bar is drawn only there); absent: it does not. */
  stderrIsTerminal?(): boolean;
}

/** The process's own streams and exit code (what `custody` on a shell uses). */
export const processIo: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  setExitCode: (code) => {
    process.exitCode = code;
  },
  stderrIsTerminal: () => process.stderr.isTTY === true,
};

const current = new AsyncLocalStorage<CliIo>();

/** The IO of the CLI run this code belongs to (the process's streams outside `withCliIo`). */
export function cliIo(): CliIo {
  return current.getStore() ?? processIo;
}

/** Runs `fn` with `io` as the CLI's output and exit code for everything it awaits. */
export function withCliIo<T>(io: CliIo, fn: () => Promise<T>): Promise<T> {
  return current.run(io, fn);
}
