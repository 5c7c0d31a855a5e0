/**
 * Two custody-on measurements for bench:e2e that a closed-loop drive cannot give (this file
 * paces the second).
 *
 * At queue depth 16 the writer's local acks come back in well under a millisecond, so it admits
 * writes faster than three holders and two nats-servers sharing one CPU can receipt them. Custody
 * is off the write path by design, so the difference piles up as custody lag, and a write's
 * protected latency then measures its place in that backlog: slices of 500 writes gave a median
 * of 94 ms, slices of 2,000 gave 344 ms, on the same commit. Neither figure is a property of the
 * custody pipeline. These two are:
 *
 * - **protected throughput**: writes per second from the first write of a closed-loop pass until a
 *   protected sync covers its last one (what the holders, NATS and the receipts sustain end to end;
 *   bench:e2e times its own `drive` and the sync);
 * - **paced protected latency**: writes offered at a fixed rate below that throughput, open loop,
 *   each latency taken from the write's scheduled time (so a stalled pipeline cannot hide behind
 *   writes that were never issued).
 */

/** Issues one write at `lba`; resolves on local admission with the key `protectedAt` is stamped by. */
export type KeyedWrite = (lba: number, data: Uint8Array) => Promise<number>;

/** The block the `i`-th write of a bench goes to: spread over the volume by a multiplicative hash. */
export function scatteredLba(i: number, blocks: number): number {
  return (i * 2654435761) % blocks;
}

/** One paced write: its key, when it was due, and when the volume admitted it locally. */
export interface PacedWrite {
  readonly key: number;
  readonly t0: number;
  readonly admitted: number;
}

/**
 * Offers `count` writes at `rate` per second (open loop, at most `maxInFlight` awaiting admission),
 * then waits for `protect`. Returns each write's key with its scheduled time and its local
 * admission time, for latencies taken against `protectedAt`.
 */
export async function pacedWrites(
  count: number,
  offset: number,
  rate: number,
  maxInFlight: number,
  blocks: number,
  write: KeyedWrite,
  protect: () => Promise<unknown>,
): Promise<PacedWrite[]> {
  const data = new Uint8Array(4096).fill(0x3c);
  const keys: PacedWrite[] = [];
  const start = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; i < count; i++) {
    const due = start + (1000 * i) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    while (inFlight.size >= maxInFlight) await Promise.race(inFlight);
    const n = offset + i;
    const p: Promise<void> = write(scatteredLba(n, blocks), data).then((key) => {
      keys.push({ key, t0: due, admitted: performance.now() });
      inFlight.delete(p);
    });
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  await protect();
  return keys;
}
