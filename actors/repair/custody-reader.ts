import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { fetchSubject } from "../../protocol/index.ts";
import { TransportError, TransportErrorCode, type Transport, type TransportSubscription } from "../../transport/index.ts";
import { decodeMessage, encodeFetchPage, encodeMessage, fetchPageBytes, unitBatchSpec, unitFetchSpec, unitSpec } from "../../protocol/index.ts";
import type { SurvivorSource } from "./survivor-source.ts";

// Reads of retained units over NATS; the `unit-fetch` / `unit-batch` kinds and the page rules are in protocol/wire/unit-fetch.ts.

/** Serves `source` (an in-process holder's retained units) on the holder's fetch subject. */
export function serveCustodyReads(transport: Transport, source: SurvivorSource): TransportSubscription {
  return transport.subscribe(fetchSubject(source.holderId), (msg) => {
    let req;
    try {
      req = decodeMessage(unitFetchSpec, msg.data);
    } catch {
      return; // malformed requests get no answer; the requester times out
    }
    const all = source
      .units(req.volume, req.lane, RangeSet.fromJSON(req.ranges))
      .filter((u) => u.firstSeq > req.after)
      .sort((a, b) => a.firstSeq - b.firstSeq);
    // Paged by bytes as well as count: a reply must stay under the server's max_payload.
    const page = encodeFetchPage(all, req.limit, fetchPageBytes(transport.maxPayloadBytes?.()));
    transport.respond(msg, encodeMessage(unitBatchSpec, { holder: source.holderId, units: page, done: page.length === all.length }));
  });
}

/** Thrown when a remote holder does not answer a fetch (unreachable or lost). */
export class FetchFailedError extends CustodyError {
  constructor(holder: string, cause: unknown) {
    super("fetch_failed", `holder ${holder} did not serve its units`, { holder, cause: (cause as { code?: string }).code ?? String(cause) });
  }
}

/**
 * How long each try of one page request waits, as parts of the fetch's `timeoutMs`: a request or
 * reply lost on the way costs a quarter of it, not all of it (sim seed 996049: two lost fetches
 * of 5 s each made a repair late), while a page that truly needs the whole time over a slow link
 * still gets it on the second try. A source that is gone costs a quarter more than one try did.
 * A page request is a read: asking again is harmless.
 */
const PAGE_TRY_SHARES = [0.25, 1] as const;

/** One page request, tried again on a timeout (see PAGE_TRY_SHARES); any other failure ends it. */
async function requestPage(transport: Transport, subject: string, body: Uint8Array, timeoutMs: number) {
  for (let i = 0; ; i++) {
    try {
      return await transport.request(subject, body, { timeoutMs: Math.max(1, Math.round(timeoutMs * PAGE_TRY_SHARES[i]!)) });
    } catch (err) {
      if (i === PAGE_TRY_SHARES.length - 1 || !(err instanceof TransportError) || err.code !== TransportErrorCode.Timeout) throw err;
    }
  }
}

/**
 * Fetches every unit of `lane` within `ranges` that `holder` retains, over NATS. With
 * `attestations`, the writer attestation tokens (base64) the holder named are added to it by first
 * sequence. Throws FetchFailedError.
 */
export async function fetchUnits(transport: Transport, holder: string, volume: string, lane: string, ranges: RangeSet, timeoutMs = 5000, attestations?: Map<number, string>): Promise<TransportUnit[]> {
  const out: TransportUnit[] = [];
  let after = -1;
  for (;;) {
    let reply;
    try {
      reply = await requestPage(transport, fetchSubject(holder), encodeMessage(unitFetchSpec, { holder, volume, lane, ranges: ranges.toJSON(), after, limit: 256 }), timeoutMs);
    } catch (err) {
      throw new FetchFailedError(holder, err);
    }
    const b = decodeMessage(unitBatchSpec, reply.data);
    for (const [i, raw] of b.units.entries()) {
      const u = decodeMessage(unitSpec, raw) as TransportUnit;
      out.push(u);
      after = Math.max(after, u.firstSeq);
      const token = b.attestations?.[b.attestationOf?.[i] ?? -1];
      if (attestations !== undefined && token !== undefined) attestations.set(u.firstSeq, Buffer.from(token.buffer, token.byteOffset, token.byteLength).toString("base64"));
    }
    if (b.done) return out;
    // A page that is neither the last nor carries a unit would leave the cursor where it is: the
    // rest of the range would be silently missing (a short recovery), so it is a failed fetch.
    if (b.units.length === 0) throw new FetchFailedError(holder, { code: "empty_page_not_done" });
  }
}
