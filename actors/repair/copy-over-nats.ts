import { unitRecordBytes } from "../../arena/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { validateTransportUnit, type TransportUnit } from "../../lanes/index.ts";
import { transferSubject } from "../../transport/protocol/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { Clock } from "../../core/index.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/index.ts";
import { encodeTransferOffer } from "../../transport/protocol/index.ts";
import { fetchUnits } from "./custody-reader.ts";

/**
 * One copy of missing custody between holders, entirely over NATS: read the units from surviving
 * holders (`custody.v1.fetch.<holder>.<volume>`, ciphertext only, every digest checked) and offer them to
 * the target (`custody.v1.transfer.<target>`), which admits them like ingress and receipts them
 * itself. Used to refill a restarted holder and to fill a replacement after a declared failure;
 * the caller decides when the target's receipts count as done.
 */

/** Largest transfer offer sent: half of NATS' default max_payload. */
export const OFFER_MAX_BYTES = 512 * 1024;

/** What one copy achieved. `unavailable` is what no source could serve (lost, or unreachable). */
export interface CopyOutcome {
  readonly units: number;
  readonly bytes: number;
  readonly copied: RangeSet;
  readonly unavailable: RangeSet;
  /** Per source that failed to answer: its error code. */
  readonly sourceErrors: Readonly<Record<string, string>>;
}

/** A holder to read from, and what it claims to retain of the lane (only that is asked for). */
export interface CopySource {
  readonly holderId: string;
  readonly retained: RangeSet;
}

/** How many parts of one source's ask are fetched at once. */
export const PARALLEL_FETCHES = 4;

/** `seqs` cut into at most `n` consecutive parts of about equal sequence counts (none empty). */
export function splitBySeqs(seqs: RangeSet, n: number): RangeSet[] {
  const per = Math.max(1, Math.ceil(seqs.count / n));
  const out: RangeSet[] = [];
  let part = RangeSet.EMPTY;
  for (const r of seqs.ranges()) {
    let first = r.first;
    while (first <= r.last) {
      const last = Math.min(r.last, first + (per - part.count) - 1);
      part = part.add(first, last);
      first = last + 1;
      if (part.count >= per) {
        out.push(part);
        part = RangeSet.EMPTY;
      }
    }
  }
  if (!part.isEmpty) out.push(part);
  return out;
}

/**
 * Offers `units` to `to` as transfer offers of at most `maxBytes` each, with the writer attestations known for them (by
 * first sequence).
 */
export function offerUnits(
  transport: Transport,
  from: string,
  to: string,
  volume: string,
  lane: string,
  units: readonly TransportUnit[],
  maxBytes = OFFER_MAX_BYTES,
  attestations: ReadonlyMap<number, string> = new Map(),
): void {
  let offerId = 0;
  for (let i = 0; i < units.length;) {
    const chunk: Uint8Array[] = [];
    const tokens: string[] = [];
    let size = 0;
    while (i < units.length && chunk.length < 256) {
      const enc = encodeMessage(unitSpec, units[i]!);
      if (chunk.length > 0 && size + enc.length > maxBytes) break;
      chunk.push(enc);
      const token = attestations.get(units[i]!.firstSeq);
      if (token !== undefined) tokens.push(token);
      size += enc.length;
      i++;
    }
    transport.publish(
      transferSubject(to),
      encodeTransferOffer({ from, to, volume, lane, offerId: ++offerId, units: chunk }, tokens),
    );
  }
}

/**
 * Copies `missing` of `lane` to `target` from `sources`, in order of preference: each source is
 * asked only for what it claims and what is still missing. Never throws for a source that fails
 * (it is reported in `sourceErrors`); the target's own receipts are the only proof of success.
 */
export async function copyOverNats(
  transport: Transport,
  o: {
    readonly copier: string;
    readonly volume: string;
    readonly lane: string;
    readonly target: string;
    readonly missing: RangeSet;
    readonly sources: readonly CopySource[];
    readonly timeoutMs?: number;
    readonly clock?: Clock;
  },
): Promise<CopyOutcome> {
  let remaining = o.missing;
  const got = new Map<number, TransportUnit>();
  // The writer attestations the sources named: the target checks the copies against them.
  const attestations = new Map<number, string>();
  const sourceErrors: Record<string, string> = {};
  for (const s of o.sources) {
    const ask = remaining.intersect(s.retained);
    if (ask.isEmpty || s.holderId === o.target) continue;
    // A fetch pages through request/reply round trips; over a long link those, not bandwidth,
    // set the copy's time, so the ask goes out as a few parts fetched side by side.
    const named = new Map<number, string>();
    const parts = await Promise.allSettled(
      splitBySeqs(ask, PARALLEL_FETCHES).map((part) =>
        fetchUnits(transport, s.holderId, o.volume, o.lane, part, o.timeoutMs ?? 5_000, {
          attestations: named,
          clock: o.clock,
        }),
      ),
    );
    for (const r of parts) {
      if (r.status === "rejected") {
        sourceErrors[s.holderId] = (r.reason as { code?: string }).code ?? "fetch_failed";
        continue;
      }
      for (const u of r.value) {
        if (got.has(u.firstSeq)) continue;
        validateTransportUnit(u);
        got.set(u.firstSeq, u);
        const token = named.get(u.firstSeq);
        if (token !== undefined) attestations.set(u.firstSeq, token);
        remaining = remaining.subtract(RangeSet.of(u.firstSeq, u.lastSeq));
      }
    }
    if (remaining.isEmpty) break;
  }
  const units = [...got.values()].sort((a, b) => a.firstSeq - b.firstSeq);
  offerUnits(transport, o.copier, o.target, o.volume, o.lane, units, OFFER_MAX_BYTES, attestations);
  let copied = RangeSet.EMPTY;
  let bytes = 0;
  for (const u of units) {
    copied = copied.add(u.firstSeq, u.lastSeq);
    bytes += unitRecordBytes(u);
  }
  return { units: units.length, bytes, copied, unavailable: o.missing.subtract(copied), sourceErrors };
}
