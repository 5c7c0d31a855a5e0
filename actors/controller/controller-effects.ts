import type { AdmissionRequest } from "../../custody/index.ts";
import type { InboundMessage } from "../../transport/index.ts";
import type { FailoverRequest } from "./failover-request-check.ts";
import type { ReleaseFrontierMessage, VolumeStatus } from "../../transport/protocol/index.ts";

/**
 * What the controller's step asks its executors to do (data only; ControllerCore.execute runs
 * them): count a counter, publish a holder's release frontier or the volume's status document,
 * commit a holder's re-admission (its outcome comes back as `admission.committed` / `.failed`),
 * answer a request, commit a failover, do a repair worker's request (see controller-requests.ts).
 */
export type ControllerEffect =
  | { readonly type: "count"; readonly name: string; readonly by?: number }
  | { readonly type: "publishFrontier"; readonly frontier: ReleaseFrontierMessage }
  | { readonly type: "publishStatus"; readonly status: VolumeStatus }
  | {
      readonly type: "commitAdmission";
      readonly key: string;
      readonly request: AdmissionRequest;
      /** The holder's signed request as it arrived (it rides along in the committed event). */
      readonly data: Uint8Array;
    }
  /** Answers a request (`payload` is the encoded answer). */
  | { readonly type: "respond"; readonly msg: InboundMessage; readonly payload: Uint8Array }
  /** Commits a checked failover request (one at a time); the outcome returns as failover.committed/failed. */
  | { readonly type: "commitFailover"; readonly msg: InboundMessage; readonly request: FailoverRequest }
  /** Does what a repair worker's request asks; the answer returns as repair.answered/failed. */
  | { readonly type: "answerRepair"; readonly msg: InboundMessage; readonly op: string };

export const count = (name: string, by?: number): ControllerEffect =>
  by === undefined ? { type: "count", name } : { type: "count", name, by };
