import { CustodyError, systemClock, type Clock } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { fetchesToHolder, fetchSubject, parseSubjectOf } from "../../transport/protocol/index.ts";
import {
  TransportError,
  TransportErrorCode,
  type InboundMessage,
  type Transport,
  type TransportSubscription,
} from "../../transport/index.ts";
import {
  decodeMessage,
  encodeFetchPage,
  encodeMessage,
  fetchPageBytes,
  unitBatchSpec,
  unitFetchSpec,
  unitSpec,
} from "../../transport/protocol/index.ts";
import type { SurvivorSource } from "./survivor-source.ts";

// Reads of retained units over NATS; the `unit-fetch` / `unit-batch` kinds and the page rules are in
// transport/protocol/wire/unit-fetch.ts.

/** Serves `source` (an in-process holder's retained units) on the holder's fetch subject. */
export function serveCustodyReads(transport: Transport, source: SurvivorSource): TransportSubscription {
  return transport.subscribe(fetchesToHolder(source.holderId), (msg) => {
    let req;
    try {
      req = decodeMessage(unitFetchSpec, msg.data);
      // The subject's volume is what permissions checked: a body naming another is not answered.
      if (parseSubjectOf("fetch", msg.subject).volume !== req.volume) return;
    } catch {
      return; // malformed requests get no answer; the requester times out
    }
    const all = source
      .units(req.volume, req.lane, RangeSet.fromJSON(req.ranges))
      .filter((u) => u.firstSeq > req.after)
      .sort((a, b) => a.firstSeq - b.firstSeq);
    // Paged by bytes as well as count: a reply must stay under the server's max_payload.
    const page = encodeFetchPage(all, req.limit, fetchPageBytes(transport.maxPayloadBytes?.()));
    transport.respond(
      msg,
      encodeMessage(unitBatchSpec, { holder: source.holderId, units: page, done: page.length === all.length }),
    );
  });
}

/** Thrown when a remote holder does not answer a fetch (unreachable or lost). */
export class FetchFailedError extends CustodyError {
  constructor(holder: string, cause: unknown) {
    super("fetch_failed", `holder ${holder} did not serve its units`, {
      holder,
      cause: (cause as { code?: string }).code ?? String(cause),
    });
  }
}

/**
 * When each copy of one page request goes out, as parts of the fetch's `timeoutMs`; every copy
 * waits until the same deadline and the first reply wins. A request or reply lost on the way costs
 * a quarter of the timeout, two lost ones half of it (sim seeds 996049 and 857158: lost fetches of
 * 5 s each made repairs late), and a page that truly needs the whole time over a slow link is
 * still taken when it comes instead of being dropped and asked for again. A page request is a
 * read: asking again is harmless.
 */
const PAGE_HEDGES = [0, 0.25, 0.5] as const;

/**
 * One page request, sent again at each PAGE_HEDGES offset while no reply has come. Fails when
 * every copy timed out, or at once on any other failure (no responders: the holder is gone).
 */
function requestPage(
  transport: Transport,
  clock: Clock,
  subject: string,
  body: Uint8Array,
  timeoutMs: number,
): Promise<InboundMessage> {
  return new Promise((resolve, reject) => {
    const started = clock.now();
    const timers: unknown[] = [];
    let pending = PAGE_HEDGES.length;
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      for (const id of timers) clock.clearTimeout(id);
      fn();
    };
    const send = () => {
      if (settled) return;
      const left = Math.max(1, Math.round(timeoutMs - (clock.now() - started)));
      // A transport that throws at once (closed) fails this copy like any other failure would.
      new Promise<InboundMessage>((res) => res(transport.request(subject, body, { timeoutMs: left }))).then(
        (reply) => settle(() => resolve(reply)),
        (err: unknown) => {
          pending--;
          const timedOut = err instanceof TransportError && err.code === TransportErrorCode.Timeout;
          if (!timedOut || pending === 0) settle(() => reject(err));
        },
      );
    };
    for (const share of PAGE_HEDGES) {
      if (share === 0) send();
      else timers.push(clock.setTimeout(send, Math.round(timeoutMs * share)));
    }
  });
}

/**
 * Fetches every unit of `lane` within `ranges` that `holder` retains, over NATS. With
 * `attestations`, the writer attestation tokens (base64) the holder named are added to it by first
 * sequence; `clock` times the page requests' extra copies (the simulator passes its own); `onPage`
 * is told each page's units as they arrive (a progress bar). Throws FetchFailedError.
 */
export async function fetchUnits(
  transport: Transport,
  holder: string,
  volume: string,
  lane: string,
  ranges: RangeSet,
  timeoutMs = 5000,
  opts: {
    readonly attestations?: Map<number, string>;
    readonly clock?: Clock;
    readonly onPage?: (units: readonly TransportUnit[]) => void;
  } = {},
): Promise<TransportUnit[]> {
  const { attestations, clock = systemClock, onPage } = opts;
  const out: TransportUnit[] = [];
  let after = -1;
  for (;;) {
    let reply;
    try {
      reply = await requestPage(
        transport,
        clock,
        fetchSubject(holder, volume),
        encodeMessage(unitFetchSpec, { holder, volume, lane, ranges: ranges.toJSON(), after, limit: 256 }),
        timeoutMs,
      );
    } catch (err) {
      throw new FetchFailedError(holder, err);
    }
    const b = decodeMessage(unitBatchSpec, reply.data);
    const first = out.length;
    for (const [i, raw] of b.units.entries()) {
      const u = decodeMessage(unitSpec, raw) as TransportUnit;
      out.push(u);
      after = Math.max(after, u.firstSeq);
      const token = b.attestations?.[b.attestationOf?.[i] ?? -1];
      if (attestations !== undefined && token !== undefined)
        attestations.set(u.firstSeq, Buffer.from(token.buffer, token.byteOffset, token.byteLength).toString("base64"));
    }
    onPage?.(out.slice(first));
    if (b.done) return out;
    // A page that is neither the last nor carries a unit would leave the cursor where it is: the
    // rest of the range would be silently missing (a short recovery), so it is a failed fetch.
    if (b.units.length === 0) throw new FetchFailedError(holder, { code: "empty_page_not_done" });
  }
}
