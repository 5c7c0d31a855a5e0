import type { Clock } from "../core/index.ts";
import type { ControlEvent, ControlEventBody } from "./control-event.ts";
import type { ControlLogFollower } from "./control-log-follower.ts";
import type { ControlLogStore } from "./control-log.ts";
import { applyControlEvent, type ControlState } from "./control-state.ts";
import { ControlConflictError, ControlFenceError } from "./control-error.ts";
import { volumeScopeProblem } from "./control-scope.ts";
import type { ControlSigner } from "./control-trust.ts";

/**
 * Who commits: the controller's name, its clock (for `issuedAt`) and, in a signed log, its key (`signer.id` must be
 * `controller`).
 */
export interface ControllerIdentity {
  readonly controller: string;
  readonly clock: Clock;
  readonly signer?: ControlSigner;
}

/**
 * Prepares and commits one control event with optimistic concurrency:
 * 1. refreshes `follower` (throws ControlLogRegressionError on a regressed/forked log);
 * 2. lets `decide` build the event body from the current state (it may throw to abstain);
 * 3. stamps the fence (current epoch and generation) and the chain (current head hash);
 * 4. checks that a signing controller's admitted volumes cover the event, then the transition
 *    (throws ControlFenceError, nothing is appended);
 * 5. appends with `expectedLastSeq` = the folded head; a concurrent commit makes this throw
 *    ControlConflictError, and the caller must re-run the whole decision, never just resend.
 * Resolves to the committed sequence and the refreshed state that includes it.
 */
export async function commitControlEvent(
  store: ControlLogStore,
  follower: ControlLogFollower,
  who: ControllerIdentity,
  decide: (s: ControlState) => ControlEventBody,
): Promise<{ seq: number; state: ControlState }> {
  const s = await follower.refresh();
  const event: ControlEvent = {
    region: store.region,
    controller: who.controller,
    preparedEpoch: s.topologyEpoch,
    preparedGeneration: s.policyGeneration,
    prevHash: s.headHash,
    issuedAt: Math.floor(who.clock.now()),
    ...decide(s),
  };
  if (who.signer !== undefined) {
    const outside = volumeScopeProblem(s, who.signer.id, event);
    if (outside !== undefined)
      throw new ControlFenceError(outside.code, outside.message, { controller: who.signer.id, type: event.type });
  }
  applyControlEvent(s, event);
  const seq = await store.append(event, s.lastSeq, who.signer);
  return { seq, state: await follower.refresh() };
}

/**
 * `commitControlEvent` for a writer of the log that is not its controller (an operator, a
 * recovery): a concurrent commit re-runs the whole decision on the newer state, up to `attempts`
 * times; any other refusal is thrown at once.
 */
export async function commitControlEventRetrying(
  store: ControlLogStore,
  follower: ControlLogFollower,
  who: ControllerIdentity,
  decide: (s: ControlState) => ControlEventBody,
  attempts = 8,
): Promise<{ seq: number; state: ControlState }> {
  for (let i = 1; ; i++) {
    try {
      return await commitControlEvent(store, follower, who, decide);
    } catch (err) {
      if (!(err instanceof ControlConflictError) || i >= attempts) throw err;
    }
  }
}
