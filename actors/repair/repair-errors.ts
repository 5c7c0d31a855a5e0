import { CustodyError } from "../../core/index.ts";

/** Thrown when survivors no longer hold a range the repair must copy (that coverage is lost). */
export class RepairSourceLostError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("repair_source_lost", "no survivor retains part of the missing coverage", detail);
  }
}

/** Raised when the replacement's receipts do not cover the copied ranges in time. */
export class RepairTimeoutError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("repair_timeout", "the replacement holder did not receipt the copied ranges in time", detail);
  }
}
