import { CustodyError } from "../core/index.ts";

/** Stable error codes of the policy engine. */
export const PolicyErrorCode = {
  invalidInput: "invalid_policy_input",
  unknownReference: "unknown_policy_reference",
  infeasiblePlacement: "infeasible_placement",
} as const;
export type PolicyErrorCode = (typeof PolicyErrorCode)[keyof typeof PolicyErrorCode];

/**
 * Thrown for malformed policy input (JSON shape, units, contradictory topology). `detail.field`
 * names the offending field as a path such as `holders[2].site`, so the CLI can point at it.
 */
export class PolicyInputError extends CustodyError {
  constructor(field: string, message: string, detail: Record<string, unknown> = {}) {
    super(PolicyErrorCode.invalidInput, `${field}: ${message}`, { field, ...detail });
  }
}

/** Thrown when an input refers to an id (site, holder, lane, scenario) that the input does not define. */
export class UnknownReferenceError extends CustodyError {
  constructor(field: string, id: string) {
    super(PolicyErrorCode.unknownReference, `${field}: unknown id "${id}"`, { field, id });
  }
}

/** Thrown when no custody graph among the candidates meets the contract. */
export class InfeasiblePlacementError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super(PolicyErrorCode.infeasiblePlacement, message, detail);
  }
}
