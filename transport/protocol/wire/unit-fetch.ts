import { z } from "zod";
import type { TransportUnit } from "../../../lanes/index.ts";
import { defineMessage, encodeMessage } from "./codec.ts";
import * as wireFields from "./fields.ts";
import { unitSpec } from "./messages.ts";

/**
 * Reads of retained units over NATS, for repair and recovery at another site. A reader serves the
 * ciphertext units a holder retains (`unit-fetch` request → `unit-batch` reply on
 * `custody.v1.fetch.<holder>.<volume>`); it never needs, or gets, a data key. Replies are paged by
 * sequence (`after`), at most `limit` units each.
 */
export const unitFetchSpec = defineMessage({
  kind: "unit-fetch",
  version: 1,
  schema: z.object({
    holder: wireFields.identifier,
    volume: wireFields.identifier,
    lane: wireFields.identifier,
    ranges: wireFields.seqRanges(4096),
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
  return maxPayloadBytes !== undefined && maxPayloadBytes > 0
    ? Math.floor(maxPayloadBytes / 2)
    : DEFAULT_FETCH_PAGE_BYTES;
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
