import { CustodyError } from "../core/index.ts";

/** A bad simulator argument or world override (code `invalid_sim_argument`); `detail` names it. */
export class SimArgumentError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_sim_argument", message, detail);
  }
}
