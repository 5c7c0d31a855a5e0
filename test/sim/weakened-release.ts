/**
 * TEST-ONLY fault switch: a release authorizer that checks only that the holder retains what it
 * releases, skipping the successor and required-scenario checks of `authorizeReleases`. It lives
 * in test/ and is passed to `runActorWorld` as an option, which hands it
 * to the controller through its test-only `authorizeReleases` port; no production config reaches it.
 */
import { RangeSet } from "../../lanes/range-set.ts";
import type { EvaluationState, ReleaseDecision, ReleaseRequest } from "../../policies/index.ts";

/** Grants every request for ranges the holder retains; the checks that keep scenarios covered are gone. */
export function weakenedAuthorize(state: EvaluationState, requests: readonly ReleaseRequest[]): ReleaseDecision[] {
  return requests.map((request) => {
    const holder = state.holders.find((h) => h.id === request.holder);
    let retained = RangeSet.EMPTY;
    for (const c of holder?.claims ?? []) if (c.lane === request.lane) retained = retained.union(c.ranges);
    const allowed = retained.coversAll(request.ranges);
    return { request, allowed, reasons: allowed ? [] : ["not_retained"], scenarios: [] };
  });
}
