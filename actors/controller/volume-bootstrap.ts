import { obligationIdOf } from "../../protocol/index.ts";
import type { ControllerCore } from "./controller-core.ts";
import type { HolderAdmission } from "./controller-ports.ts";

/**
 * The first entries of a fresh control log, committed by the controller (what `custody bootstrap`
 * does for a deployment): holder admissions, then one obligation per lane naming `responsible`
 * from `fromSeq` on.
 */
export async function bootstrapVolume(controller: ControllerCore, holders: readonly HolderAdmission[], responsible: readonly string[], fromSeq = 1): Promise<void> {
  const { volume, lanes } = controller.config.topology;
  for (const h of holders) await controller.commit(() => ({ type: "admit_holder", ...h }));
  for (const lane of lanes) {
    await controller.commit(() => ({ type: "create_obligation", obligationId: obligationIdOf(volume, lane), volume, lane, representation: "raw", holders: responsible, fromSeq }));
  }
}
