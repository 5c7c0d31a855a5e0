import type { AdmissionRequest } from "../../custody/index.ts";
import type { ReleaseFrontierMessage, VolumeStatus } from "../../transport/protocol/index.ts";

/**
 * What the controller's step asks its executors to do (data only; ControllerCore.execute runs
 * them): count a counter, publish a holder's release frontier or the volume's status document,
 * commit a holder's re-admission (its outcome comes back as `admission.committed` / `.failed`).
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
    };

export const count = (name: string, by?: number): ControllerEffect =>
  by === undefined ? { type: "count", name } : { type: "count", name, by };
