import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import {
  AdmissionError,
  AdmissionRefusal,
  checkAutoAdmission,
  readAdmissionRequest,
  type AdmissionRequest,
} from "../../custody/index.ts";
import type { ControlEventBody } from "../../custody/index.ts";
import type { ControlState } from "../../custody/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import type { ControllerConfig } from "./controller-config.ts";

/** What key-continuity admission needs from its controller. */
export interface AutoAdmissionDeps {
  readonly config: ControllerConfig;
  readonly counters: Counters;
  /** The newest folded control-log state. */
  controlState(): ControlState;
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }>;
  /** An admission was committed; `state` includes it. */
  admitted(state: ControlState): void;
}

/**
 * A holder's new incarnation asks to be admitted. Under the key-continuity policy it is committed
 * when the log already admitted that holder with the same key and failure domain and the
 * incarnation is higher; anything else is counted (`admission_<code>`) and left to an operator.
 * Requests for holders outside this controller's topology (or standby list) are ignored, and so are
 * those of standbys not yet enlisted.
 */
export class AutoAdmission {
  /** Admission commits in flight (`holder#incarnation`), so repeated requests commit once. */
  private readonly admitting = new Set<string>();

  constructor(private readonly d: AutoAdmissionDeps) {}

  handle(msg: InboundMessage): void {
    let req: AdmissionRequest;
    try {
      req = readAdmissionRequest(msg.data);
      const standby = (this.d.config.repair?.standby ?? []).some((x) => x.holderId === req.holderId);
      if (!(req.holderId in this.d.config.topology.holderSites) && !standby) return;
      // A standby never admitted asks until it is enlisted: that is the repair launcher's to answer, not a refusal.
      if (standby && this.d.controlState().holders[req.holderId] === undefined) return;
      checkAutoAdmission(this.d.controlState(), req);
    } catch (err) {
      if (!(err instanceof AdmissionError && err.code === AdmissionRefusal.NotNewer))
        this.d.counters.inc(err instanceof CustodyError ? err.code : "admission_malformed");
      return;
    }
    const key = `${req.holderId}#${req.incarnation}`;
    if (this.admitting.has(key)) return;
    this.admitting.add(key);
    this.d
      .commit((s) => {
        checkAutoAdmission(s, req);
        // The holder's own request rides along: with it a controller of any one of a shared holder's
        // volumes may commit the re-admission (custody/control-scope.ts authorityScope).
        return {
          type: "admit_holder",
          holderId: req.holderId,
          incarnation: req.incarnation,
          publicKey: req.publicKey,
          failureDomain: req.failureDomain,
          request: msg.data,
        };
      })
      .then(({ state }) => {
        this.d.counters.inc("admission_committed");
        this.d.admitted(state);
      })
      .catch((err) => this.d.counters.inc(`admission_${err instanceof CustodyError ? err.code : "failed"}`))
      .finally(() => this.admitting.delete(key));
  }
}
