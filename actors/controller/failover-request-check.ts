import { CustodyError } from "../../core/index.ts";
import { foldFailover, type ControlState } from "../../custody/index.ts";

/**
 * Which failover requests the controller commits (pure). Bad input is refused before anything is
 * committed, for every lane at once, so a request never leaves half its lanes failed over: lanes of
 * this volume only, each once and covered by an obligation, a cut only for a requested lane and not
 * above the highest sequence any holder receipted. A term that does not advance is refused by the control-log fold's
 * own rule (`foldFailover`, ControlFenceError `failover_order`), run here as a dry run on the folded state.
 * A lane whose committed failover already has this term and cut is the same request again (its
 * reply was lost): it is answered from the log, not committed twice.
 */

/**
 * Thrown (answered, counted as `failover_request_refused`) for a request outside this controller's volume or above what
 * holders hold.
 */
export class FailoverRequestRefusedError extends CustodyError {
  constructor(reason: string, detail: Record<string, unknown>) {
    super("failover_request_refused", `failover request refused: ${reason}`, { reason, ...detail });
  }
}

/**
 * A failover as asked: `lanes` of `volume` continue under writer `term` from `recoveredCut` (lane → sequence, 0 when
 * absent).
 */
export interface FailoverRequest {
  readonly volume: string;
  readonly lanes: readonly string[];
  readonly term: number;
  readonly recoveredCut: Readonly<Record<string, number>>;
}

/** One lane of an accepted request: its cut, its old head and whether its `commit_failover` is already in the log. */
export interface LaneFailover {
  readonly lane: string;
  readonly cut: number;
  readonly oldHead: number;
  readonly committed: boolean;
}

/**
 * The lanes to fail over, in request order; throws FailoverRequestRefusedError for bad input and
 * ControlFenceError `failover_order` for a term or cut the fold would refuse. `receiptedHead(lane)`:
 * the highest sequence any holder receipted on `lane` (what the controller's ledger knows).
 */
export function checkFailoverRequest(
  s: ControlState,
  volume: { readonly volume: string; readonly lanes: readonly string[] },
  req: FailoverRequest,
  receiptedHead: (lane: string) => number,
): LaneFailover[] {
  const refuse = (reason: string, detail: Record<string, unknown> = {}) =>
    new FailoverRequestRefusedError(reason, { volume: req.volume, term: req.term, ...detail });
  if (req.volume !== volume.volume) throw refuse(`this controller serves ${volume.volume}`);
  if (!Number.isSafeInteger(req.term) || req.term < 1) throw refuse("a term below 1");
  if (new Set(req.lanes).size !== req.lanes.length) throw refuse("a lane named twice", { lanes: req.lanes });
  for (const lane of req.lanes)
    if (!volume.lanes.includes(lane)) throw refuse(`lane ${lane} is not a lane of ${volume.volume}`, { lane });
  for (const lane of Object.keys(req.recoveredCut))
    if (!req.lanes.includes(lane)) throw refuse(`a cut for lane ${lane}, which is not failed over`, { lane });
  return req.lanes.map((lane) => {
    const cut = req.recoveredCut[lane] ?? 0;
    const prev = s.failovers?.[`${req.volume}/${lane}`];
    if (prev !== undefined && prev.term === req.term && prev.recoveredCut === cut)
      return { lane, cut, oldHead: prev.oldHead, committed: true };
    // The fold refuses a lane no obligation covers (`unknown_obligation`): refused here, before any lane commits.
    if (!Object.values(s.obligations).some((o) => o.volume === req.volume && o.lane === lane))
      throw refuse(`no obligation covers lane ${lane} yet`, { lane });
    const head = receiptedHead(lane);
    if (cut > head)
      throw refuse(`recovered cut ${cut} of lane ${lane} is above ${head}, the highest sequence any holder receipted`, {
        lane,
        cut,
        head,
      });
    foldFailover(s.failovers ?? {}, {
      type: "commit_failover",
      volume: req.volume,
      lane,
      term: req.term,
      recoveredCut: cut,
      oldHead: head,
      firstSeq: head + 1,
      issuedAt: 0,
    });
    return { lane, cut, oldHead: head, committed: false };
  });
}
