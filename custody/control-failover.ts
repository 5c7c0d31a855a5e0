import { ControlFenceCode, ControlFenceError } from "./control-error.ts";
import type { ControlEventBody } from "./control-event.ts";

/** The newest committed failover of one lane: the cut the new term continues from and the old history it abandons. */
export interface FailoverRecord {
  readonly volume: string;
  readonly lane: string;
  readonly term: number;
  readonly recoveredCut: number;
  readonly oldHead: number;
  readonly firstSeq: number;
  /** When it was committed (the event's `issuedAt`). */
  readonly committedAt: number;
}

/** Failovers by `<volume>/<lane>`: the newest per lane. */
export type Failovers = Readonly<Record<string, FailoverRecord>>;

/**
 * The failovers after `e`. Refused (ControlFenceError `failover_order`) unless the term is above
 * the lane's last failover term and recoveredCut ≤ oldHead < firstSeq: the new history never
 * reuses a sequence the old one may have written. Pure (a controller runs it as a dry run to refuse
 * a failover request before committing any of its lanes).
 */
export function commitFailover(
  failovers: Failovers,
  e: Extract<ControlEventBody, { type: "commit_failover" }> & { readonly issuedAt: number },
): Failovers {
  const key = `${e.volume}/${e.lane}`;
  const prev = failovers[key];
  const bad = (message: string): never => {
    throw new ControlFenceError(ControlFenceCode.failover_order, `failover of ${key} to term ${e.term}: ${message}`, {
      volume: e.volume,
      lane: e.lane,
      term: e.term,
    });
  };
  if (prev !== undefined && e.term <= prev.term) bad(`term does not advance past ${prev.term}`);
  if (!(e.recoveredCut <= e.oldHead)) bad(`recovered cut ${e.recoveredCut} is above the old head ${e.oldHead}`);
  if (!(e.oldHead < e.firstSeq)) bad(`first sequence ${e.firstSeq} is not above the old head ${e.oldHead}`);
  if (prev !== undefined && e.recoveredCut < prev.recoveredCut)
    bad(`recovered cut ${e.recoveredCut} is below the previous failover's ${prev.recoveredCut}`);
  const { volume, lane, term, recoveredCut, oldHead, firstSeq } = e;
  return { ...failovers, [key]: { volume, lane, term, recoveredCut, oldHead, firstSeq, committedAt: e.issuedAt } };
}
