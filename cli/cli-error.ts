import { CustodyError } from "../core/index.ts";

/** A bad CLI argument of the custody commands. */
export class CustodyCliError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown> = {}) {
    super("bad_argument", message, detail);
  }
}
