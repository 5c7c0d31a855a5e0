import { obligationIdOf } from "../../transport/protocol/index.ts";
import type { ControllerCore } from "./controller-core.ts";
import type { HolderAdmission } from "./controller-ports.ts";

/**
 * The first entries of a fresh control log, committed by the controller (what `custody bootstrap`
 * does for a deployment): holder admissions bound to its volume, then one obligation per lane naming `responsible` from
 * `fromSeq` on, and one per derived lane of a coalesced stream naming every admitted holder.
 */
export async function bootstrapVolume(
  controller: ControllerCore,
  holders: readonly HolderAdmission[],
  responsible: readonly string[],
  fromSeq = 1,
): Promise<void> {
  const { volume, lanes } = controller.config.topology;
  for (const h of holders) await controller.commit(() => ({ type: "admit_holder", ...h, volumes: [volume] }));
  for (const lane of lanes) {
    await controller.commit(() => ({
      type: "create_obligation",
      obligationId: obligationIdOf(volume, lane),
      volume,
      lane,
      representation: "raw",
      holders: responsible,
      fromSeq,
    }));
  }
  // A coalesced stream's derived lanes, so their windows can be released once a base contains them.
  // The topology does not say which holders take them: every admitted holder answers for them.
  for (const lane of Object.keys(controller.config.topology.coalesced ?? {})) {
    await controller.commit(() => ({
      type: "create_obligation",
      obligationId: obligationIdOf(volume, lane),
      volume,
      lane,
      representation: "coalesced",
      holders: holders.map((h) => h.holderId),
      fromSeq,
    }));
  }
}
