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
  /** True once nobody reads stdout any more (`custody status --watch | head -2`): a redraw loop ends. */
  stdoutClosed?(): boolean;
}

/** Streams of this process whose reader went away (EPIPE): what is written to them is dropped. */
const closedStreams = new Set<NodeJS.WriteStream>();

const writeTo = (stream: NodeJS.WriteStream, text: string) => {
  if (!closedStreams.has(stream)) stream.write(text);
};

/** The process's own streams and exit code (what `custody` on a shell uses). */
export const processIo: CliIo = {
  stdout: (text) => writeTo(process.stdout, text),
  stderr: (text) => writeTo(process.stderr, text),
  setExitCode: (code) => {
    process.exitCode = code;
  },
  stderrIsTerminal: () => process.stderr.isTTY === true,
  stdoutClosed: () => closedStreams.has(process.stdout),
};

/**
 * Output to a closed pipe ends quietly (`custody status … | head -2`): an EPIPE on stdout or
 * stderr marks that stream closed, so later output is dropped instead of ending the process with a
 * stack trace; the command itself finishes and exits with its own code. Any other stream error is
 * one line on stderr. Installed once, by the `custody` executable.
 */
export function dropOutputToClosedPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      closedStreams.add(stream);
      if (err.code !== "EPIPE" && stream !== process.stderr)
        writeTo(
          process.stderr,
          `error [${(err.code ?? "output_failed").toLowerCase()}]: cannot write the output: ${err.message}\n`,
        );
    });
  }
}

/** Resolves once what was written to stdout and stderr has been handed to the system (or the stream is gone). */
export async function outputFlushed(): Promise<void> {
  await Promise.all(
    [process.stdout, process.stderr].map(
      (s) =>
        new Promise<void>((resolve) =>
          closedStreams.has(s) || s.destroyed ? resolve() : s.write("", () => resolve()),
        ),
    ),
  );
}

const current = new AsyncLocalStorage<CliIo>();

/** The IO of the CLI run this code belongs to (the process's streams outside `withCliIo`). */
export function cliIo(): CliIo {
  return current.getStore() ?? processIo;
}

/** Runs `fn` with `io` as the CLI's output and exit code for everything it awaits. */
export function withCliIo<T>(io: CliIo, fn: () => Promise<T>): Promise<T> {
  return current.run(io, fn);
}
