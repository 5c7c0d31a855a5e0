import type { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import { encodeMessage } from "../../transport/protocol/index.ts";
import { encodeFetchPage, fetchPageBytes, unitBatchSpec } from "../../transport/protocol/index.ts";
import type { HolderCore } from "./holder-core.ts";

/**
 * The holder's own read service on `custody.v1.fetch.<holder>.<volume>`: repair and recovery ask it for
 * retained units (ciphertext; no key needed) and it answers from RAM and, for spilled segments,
 * from its spill stream — so what a restarted disk holder recovered is readable like anything
 * else. Replies are paged by bytes, under `maxReplyBytes` (kept below the server's max_payload).
 */

/**
 * Answers one fetch request the machine's step accepted (holder-read-steps.ts) with the `wanted`
 * units of lane `key` after the caller's cursor, asynchronously when disk is read.
 */
export function serveFetch(
  core: HolderCore,
  key: string,
  req: { readonly after: number; readonly limit: number; readonly wanted: RangeSet },
  msg: InboundMessage,
  maxReplyBytes = fetchPageBytes(core.io.transport.maxPayloadBytes?.()),
): void {
  const hl = core.lanes.get(key);
  const { wanted } = req;
  const respond = (units: readonly TransportUnit[], complete: boolean, known = new Map<number, string>()) => {
    const after = units.filter((u) => u.firstSeq > req.after).sort((a, b) => a.firstSeq - b.firstSeq);
    const page = encodeFetchPage(after, req.limit, maxReplyBytes);
    core.counters.inc("fetch_served_units", page.length);
    const body = { holder: core.config.holderId, units: page, done: complete && page.length === after.length };
    core.io.transport.respond(
      msg,
      encodeMessage(unitBatchSpec, { ...body, ...pageAttestations(after.slice(0, page.length), known) }),
    );
  };
  // A lane we do not serve gets no answer (see holder-read-steps.ts).
  if (hl === undefined) return void core.counters.inc("fetch_unknown_lane");
  if (wanted.isEmpty) return respond([], true);
  hl.unitsPage(core.spillStream, wanted, req.limit + 1, maxReplyBytes + 1).then(
    (r) => respond(r.units, r.complete, r.attestations),
    () => core.counters.inc("fetch_unreadable"),
  );
}

/**
 * The writer attestations of a page's units, each token once, so a copier can offer them on with
 * the writer's signature (absent when none is known: the reply is what it was before).
 */
function pageAttestations(
  units: readonly TransportUnit[],
  known: ReadonlyMap<number, string>,
): { attestations?: Uint8Array[]; attestationOf?: number[] } {
  const index = new Map<string, number>();
  const attestationOf = units.map((u) => {
    const token = known.get(u.firstSeq);
    if (token === undefined) return -1;
    if (!index.has(token)) index.set(token, index.size);
    return index.get(token)!;
  });
  if (index.size === 0) return {};
  return { attestations: [...index.keys()].map((t) => new Uint8Array(Buffer.from(t, "base64"))), attestationOf };
}
