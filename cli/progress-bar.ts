import { cliIo } from "./cli-io.ts";

/** One frame of a long command's progress: `done` of `total` `unit`s of one phase, and the bytes behind them. */
export interface ProgressFrame {
  /** What is being done, e.g. `fetch h-w1/l0`, `apply`. */
  readonly label: string;
  readonly done: number;
  readonly total: number;
  /** What `done` and `total` count: `seqs`, `records`, `blocks`, `bytes`. */
  readonly unit: string;
  /** Bytes moved in this phase so far (the rate is taken from them). */
  readonly bytes: number;
  /** Time since the phase began. */
  readonly elapsedMs: number;
  /** Anything else worth a glance, e.g. `412 units`. */
  readonly extra?: string;
}

const BAR = 20;

/** `1,234`. */
const count = (n: number) => Math.round(n).toLocaleString("en-US");

/** `48.0 MiB`, `512 B`. */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** `42s`, `3m05s`, `1h02m`. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/**
 * One line for a frame: `apply [########------------] 1,234/3,000 records  4.8 MiB  2.1 MiB/s  ETA 2s`.
 * The rate is the phase's bytes over its elapsed time; the ETA the remaining share at the pace so
 * far (`ETA ?` until something is done). Pure.
 */
export function progressLine(f: ProgressFrame): string {
  const share = f.total > 0 ? Math.min(1, f.done / f.total) : 0;
  const filled = Math.round(share * BAR);
  const bar = `[${"#".repeat(filled)}${"-".repeat(BAR - filled)}]`;
  const seconds = f.elapsedMs / 1000;
  const rate = seconds > 0 ? `${formatBytes(f.bytes / seconds)}/s` : "-";
  const eta =
    f.done >= f.total
      ? "done"
      : f.done > 0 && f.elapsedMs > 0
        ? `ETA ${formatDuration((f.elapsedMs * (f.total - f.done)) / f.done)}`
        : "ETA ?";
  const amount =
    f.unit === "bytes"
      ? `${formatBytes(f.done)}/${formatBytes(f.total)}`
      : `${count(f.done)}/${count(f.total)} ${f.unit}`;
  return [
    `${f.label} ${bar} ${amount}`,
    ...(f.extra !== undefined ? [f.extra] : []),
    formatBytes(f.bytes),
    rate,
    eta,
  ].join("  ");
}

/** Draws progress on one terminal line, or does nothing. */
export interface ProgressBar {
  /** Starts a phase (its clock) or updates it. */
  show(frame: Omit<ProgressFrame, "elapsedMs">): void;
  /** Erases the line (before the result or an error is printed). */
  clear(): void;
}

/** Least time between two redraws of the same phase. */
const REDRAW_MS = 100;

/**
 * A progress bar on the run's stderr when it is a terminal (redrawn in place at most every
 * 100 ms, and whenever the phase changes or ends); when stderr is not a terminal it prints nothing,
 * so piped and `--json` output stay as they are.
 */
export function progressBar(now: () => number = () => performance.now()): ProgressBar {
  const io = cliIo();
  if (io.stderrIsTerminal?.() !== true) return { show: () => undefined, clear: () => undefined };
  let label: string | undefined;
  let began = 0;
  let drawn = -Infinity;
  let visible = false;
  return {
    show(frame) {
      const t = now();
      if (frame.label !== label) {
        label = frame.label;
        began = t;
      } else if (t - drawn < REDRAW_MS && frame.done < frame.total) return;
      drawn = t;
      visible = true;
      const columns = process.stderr.columns || 120; // a terminal of unknown width (0) gets 120
      io.stderr(`\r${progressLine({ ...frame, elapsedMs: t - began }).slice(0, Math.max(20, columns - 1))}\x1b[K`);
    },
    clear() {
      if (visible) io.stderr("\r\x1b[K");
      visible = false;
    },
  };
}
