import { systemClock } from "../../core/index.ts";
import { commitControlEvent, ControlLogFollower, type ControlEventBody, type ControlLogStore } from "../../custody/index.ts";

/**
 * Commits `body` to a control log the way the operator's commands do on an unsigned log (`custody
 * holder admit`, `custody holder fail`, `custody hold`): folded from the log itself, not through a
 * controller. Resolves with the entry's sequence.
 */
export async function operatorCommit(store: ControlLogStore, body: ControlEventBody): Promise<{ seq: number }> {
  const follower = new ControlLogFollower(store);
  return await commitControlEvent(store, follower, { controller: "operator", clock: systemClock }, () => body);
}
