import { z } from "zod";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { fetchSubject } from "../../protocol/index.ts";
import type { Transport, TransportSubscription } from "../../transport/index.ts";
import { decodeMessage, defineMessage, encodeMessage, unitSpec, wireFields } from "../../protocol/index.ts";
import type { SurvivorSource } from "./survivor-source.ts";

/**
 * Reads of retained units over NATS, for repair and recovery at another site. A reader serves the
 * ciphertext units a holder retains (`unit-fetch` request → `unit-batch` reply on
 * `custody.v1.fetch.<holder>`); it never needs, or gets, a data key. Replies are paged by
 * sequence (`after`), at most `limit` units each.
 */
export const unitFetchSpec = defineMessage({
  kind: "unit-fetch",
  version: 1,
  schema: z.object({
    holder: wireFields.identifier,
    volume: wireFields.identifier,
    lane: wireFields.identifier,
    ranges: z.array(z.tuple([wireFields.uint, wireFields.uint])).max(4096),
    /** Only units whose firstSeq is greater than this. */
    after: z.number().int().min(-1),
    limit: z.number().int().min(1).max(1024),
  }),
  maxBytes: 128 * 1024,
});

export const unitBatchSpec = defineMessage({
  kind: "unit-batch",
  version: 1,
  schema: z.object({
    holder: wireFields.identifier,
    units: z.array(wireFields.bytes).max(1024),
    /** True when no unit after the last one returned matches. */
    done: z.boolean(),
    /** Writer attestation tokens (raw bytes) of the returned units, each once (optional: none known). */
    attestations: z.array(wireFields.bytes).max(1024).optional(),
    /** Per returned unit, the index of its token in `attestations`, or -1. */
    attestationOf: z.array(z.number().int().min(-1).max(1023)).max(1024).optional(),
  }),
  maxBytes: 16 * 1024 * 1024,
});

/** Default page budget: half of NATS' default 1 MiB max_payload, leaving room for framing. */
export const DEFAULT_FETCH_PAGE_BYTES = 512 * 1024;

/**
 * The byte budget of one fetch reply: half the server's max_payload when the transport knows it
 * (room for the envelope and headers), else half of NATS' default.
 */
export function fetchPageBytes(maxPayloadBytes: number | undefined): number {
  return maxPayloadBytes !== undefined && maxPayloadBytes > 0 ? Math.floor(maxPayloadBytes / 2) : DEFAULT_FETCH_PAGE_BYTES;
}

/**
 * Encodes the first units of `sorted` (ascending by first sequence) into one fetch page: at most
 * `limit` units and, past the first, no more than `budgetBytes` encoded. Pure.
 */
export function encodeFetchPage(sorted: readonly TransportUnit[], limit: number, budgetBytes: number): Uint8Array[] {
  const page: Uint8Array[] = [];
  let size = 0;
  for (const u of sorted) {
    if (page.length >= limit) break;
    const enc = encodeMessage(unitSpec, u);
    if (page.length > 0 && size + enc.byteLength > budgetBytes) break;
    page.push(enc);
    size += enc.byteLength;
  }
  return page;
}

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
      reply = await transport.request(fetchSubject(holder), encodeMessage(unitFetchSpec, { holder, volume, lane, ranges: ranges.toJSON(), after, limit: 256 }), { timeoutMs });
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
    if (b.done || b.units.length === 0) return out;
  }
}
