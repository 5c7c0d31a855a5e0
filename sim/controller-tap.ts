import type { Controller } from "../actors/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { decodeMessage, releaseFrontierSpec, releaseSubject, statusSubject } from "../transport/protocol/index.ts";
import type { EventTrace } from "./event-trace.ts";

/** Where a controller's tapped messages land in the actor world. */
export interface ControllerTapSink {
  readonly volume: string;
  readonly lane: string;
  /** What the controller's evaluation input claimed per holder at its last status. */
  readonly ledgerClaims: Map<string, RangeSet>;
  /** Release frontiers committed and published, per holder (cumulative). */
  readonly granted: Map<string, RangeSet>;
  readonly trace: EventTrace;
  readonly relMs: () => number;
  confirmed(cuts: ReadonlyMap<string, number>): void;
  grantedTo(holder: string, ranges: RangeSet): void;
}

/**
 * What a controller said, as it said it: a status document gives the required scenarios' confirmed
 * cuts (and the ledger's claims); a release frontier is a grant. `controller` is the one that published.
 */
export function tapControllerMessage(
  sink: ControllerTapSink,
  subject: string,
  data: Uint8Array,
  controller: Controller | undefined,
): void {
  if (subject === statusSubject(sink.volume)) {
    const report = controller?.report();
    if (controller === undefined || report === undefined) return;
    for (const h of controller.evaluationState().holders) {
      let claimed = RangeSet.EMPTY;
      for (const c of h.claims) if (c.lane === sink.lane) claimed = claimed.union(c.ranges);
      sink.ledgerClaims.set(h.id, claimed);
    }
    const cuts = new Map<string, number>();
    // A cut counts as confirmed only on fresh evidence: a report resting on a silent holder's
    // stale receipts says so (`evidence: stale`) and promises nothing.
    for (const r of report.reports)
      if (r.required && r.kind === "scenario")
        cuts.set(r.name, r.evidence === "observed" ? (r.cut?.[sink.lane] ?? -1) : -1);
    sink.confirmed(cuts);
    return;
  }
  if (subject.startsWith("custody.v1.release.")) {
    const f = decodeMessage(releaseFrontierSpec, data);
    if (subject !== releaseSubject(f.holder)) return;
    const ranges = RangeSet.fromJSON(f.ranges);
    sink.granted.set(f.holder, (sink.granted.get(f.holder) ?? RangeSet.EMPTY).union(ranges));
    sink.trace.record({
      atMs: sink.relMs(),
      kind: "grant_release",
      actor: controller?.id ?? "ctrl",
      detail: { holder: f.holder, ranges: f.ranges },
    });
    sink.grantedTo(f.holder, ranges);
  }
}
