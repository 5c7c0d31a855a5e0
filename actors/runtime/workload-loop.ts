import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { WriteAck } from "../index.ts";
import { workloadWrite } from "./workload.ts";

/**
 * What the workload needs of a writer: a write (resolves once the volume admitted it) and a sync (local, or under a
 * contract).
 */
export interface WorkloadTarget {
  write(lba: number, data: Uint8Array): Promise<WriteAck>;
  sync(contract?: string, timeoutMs?: number): Promise<unknown>;
}

/** The `workload` section of a writer role (see actors/runtime/role-config.ts). */
export interface WorkloadOptions {
  readonly intervalMs: number;
  readonly ackLog?: string;
  readonly depth?: number;
  readonly inFlight?: number;
  readonly ratePerSec?: number;
  readonly blocksPerWrite?: number;
  /** Acknowledge (and log) a write only once a sync under this contract proved it protected. */
  readonly contract?: { readonly name: string; readonly timeoutMs?: number };
  /** Stop once this many writes (counted from this start) were acknowledged. */
  readonly count?: number;
}

/**
 * A running workload: `written` counts acknowledged writes; `done` settles once `stop()` was called and it wound down.
 */
export interface RunningWorkload {
  readonly done: Promise<void>;
  written(): number;
  stop(): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Runs the synthetic workload against `target` until stopped. Write `i` is
 * `workloadWrite(i, blocksPerWrite, blockCount)`; a write counts as acknowledged only after a local
 * sync that began after the volume admitted it (volume barrier and outbox flush, see
 * docs/write-path.md) — with `contract`, a sync that proved it protected under that contract —
 * and only then gets its line in the acknowledgement log. With `count` it ends by itself once
 * that many writes were acknowledged. With `inFlight` the
 * writes overlap (a sliding window: a new write is issued as soon as the oldest is acknowledged);
 * otherwise `depth` writes are issued together and synced once, round after round.
 */
/** What both pacings share: the options, the numbering, the writes, the sync, and what was acknowledged. */
interface WorkloadRun {
  readonly w: WorkloadOptions;
  /** The number of the first write of this start. */
  readonly first: number;
  readonly started: number;
  readonly count: number;
  running: boolean;
  written: number;
  write(i: number): ReturnType<typeof workloadWrite>;
  traced(lba: number, data: Uint8Array): Promise<WriteAck>;
  sync(): Promise<unknown>;
  /** Milliseconds until write number `issued` (counted from this start) is due. */
  due(issued: number): number;
  /** Logs acknowledged writes (synchronously) and counts them. */
  record(lines: { i: number; ack: WriteAck; lba: number }[]): void;
}

/** `depth` writes issued together and synced once, round after round. */
async function runRounds(run: WorkloadRun): Promise<void> {
  const depth = run.w.depth ?? 1;
  let i = run.first;
  let issued = 0;
  while (run.running && issued < run.count) {
    try {
      const round = Array.from({ length: Math.min(depth, run.count - issued) }, (_, k) => i + k);
      const writes = round.map((j) => run.write(j));
      const acks = await Promise.all(writes.map((x) => run.traced(x.lba, x.data)));
      await run.sync();
      run.record(acks.map((ack, k) => ({ i: round[k]!, ack, lba: writes[k]!.lba })));
      i += round.length;
      issued += round.length;
    } catch {
      if (!run.running) break;
    }
    const wait = run.w.ratePerSec !== undefined ? run.due(issued) : run.w.intervalMs;
    if (wait > 0 && issued < run.count) await sleep(wait);
  }
}

/** A sliding window of `inFlight` writes: a new write is issued as soon as the oldest is acknowledged. */
async function runWindow(run: WorkloadRun, inFlight: number): Promise<void> {
  // Oldest first; `outcome` is set once the write was admitted AND a sync issued after that completed.
  const open: { i: number; lba: number; outcome?: { ack: WriteAck } | { err: unknown } }[] = [];
  let issued = 0;
  let nextAt = run.started;
  let wake: (() => void) | undefined;
  const issue = () => {
    const i = run.first + issued++;
    const x = run.write(i);
    const entry: (typeof open)[number] = { i, lba: x.lba };
    open.push(entry);
    // Called in order and synchronously up to the volume's queue, so LSNs and lane sequences follow `i`.
    run
      .traced(x.lba, x.data)
      .then(async (ack) => (await run.sync(), ack))
      .then(
        (ack) => (entry.outcome = { ack }),
        (err: unknown) => (entry.outcome = { err }),
      )
      .finally(() => wake?.());
    nextAt =
      run.w.ratePerSec !== undefined ? run.started + (issued / run.w.ratePerSec) * 1000 : Date.now() + run.w.intervalMs;
  };
  while (run.running || open.length > 0) {
    // Logged in write order: a write is logged once it and every earlier one settled. A failed
    // write or sync is not acknowledged and gets no line; the stream goes on.
    const acked: { i: number; ack: WriteAck; lba: number }[] = [];
    while (open[0]?.outcome !== undefined) {
      const e = open.shift()!;
      if ("ack" in e.outcome!) acked.push({ i: e.i, ack: e.outcome.ack, lba: e.lba });
    }
    run.record(acked);
    const wait = nextAt - Date.now();
    // A failed write is not acknowledged: with `count`, it is issued again under a later number.
    const more = run.running && run.written + open.length < run.count;
    if (more && open.length < inFlight && wait <= 0) {
      issue();
      continue;
    }
    if (!more && open.length === 0) break;
    // Until a write settles, or the pace lets the next one go when there is room for it.
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      wake = resolve;
      if (more && open.length < inFlight) timer = setTimeout(resolve, wait);
    });
    clearTimeout(timer);
    wake = undefined;
  }
}

export function startWorkload(
  target: WorkloadTarget,
  w: WorkloadOptions,
  blockCount: number,
  traced: (lba: number, data: Uint8Array) => Promise<WriteAck>,
): RunningWorkload {
  const log = w.ackLog;
  if (log !== undefined) mkdirSync(dirname(log), { recursive: true });
  // A restart continues the write numbering where the log ends (what the earlier process saw acknowledged).
  const first = log !== undefined && existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).length : 0;
  const blocks = w.blocksPerWrite ?? 1;
  const started = Date.now();
  const count = w.count ?? Infinity;
  const contract = w.contract;
  const contractSync = () =>
    contract !== undefined ? target.sync(contract.name, contract.timeoutMs ?? 30_000) : target.sync();
  const run: WorkloadRun = {
    w,
    first,
    started,
    count,
    running: true,
    written: 0,
    write: (i) => workloadWrite(i, blocks, blockCount),
    traced,
    sync: contractSync,
    due: (issued) => (w.ratePerSec !== undefined ? started + (issued / w.ratePerSec) * 1000 - Date.now() : 0),
    record: (lines) => {
      // Written synchronously after the ack, so a SIGKILL never loses a line of a write the log's reader must find.
      if (log !== undefined && lines.length > 0)
        appendFileSync(
          log,
          lines
            .map(({ i, ack, lba }) => JSON.stringify({ i, lsn: ack.lsn, lba, seq: ack.pieces[0]?.seq ?? 0 }) + "\n")
            .join(""),
        );
      run.written += lines.length;
    },
  };
  const done = w.inFlight !== undefined ? runWindow(run, w.inFlight) : runRounds(run);
  return {
    done,
    written: () => run.written,
    stop: () => {
      run.running = false;
    },
  };
}
