import { createPublicKey } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import type { Command } from "commander";
import type { ControllerIdentity } from "../custody/index.ts";
import type { ControlSigner, ControlTrust } from "../custody/index.ts";
import { privateKeyFromPkcs8 } from "../custody/index.ts";
import { systemClock } from "../core/index.ts";
import { CustodyCliError } from "./cli-error.ts";

/** Options of commands that commit to (or read) a signed control log as the operator. */
export interface OperatorKeyOptions {
  operatorKey?: string;
  operatorId: string;
}

/** Adds `--operator-key FILE` and `--operator-id ID` to a command. */
export function withOperatorKey(c: Command): Command {
  return c
    .option(
      "--operator-key <file>",
      "the operator's Ed25519 key (PKCS#8 DER, mode 0600): sign what is committed and trust only signed " +
        "entries (custody init writes operator/operator.key)",
    )
    .option("--operator-id <id>", "the operator id the control log's readers trust", "operator");
}

/**
 * The operator's identity for commits and its trust root for reads. Without `--operator-key` the
 * log is written and read unsigned (a deployment without a trust root).
 */
export function operatorAccess(o: OperatorKeyOptions): { who: ControllerIdentity; trust?: ControlTrust } {
  if (o.operatorKey === undefined) return { who: { controller: o.operatorId, clock: systemClock } };
  let signer: ControlSigner;
  try {
    const mode = statSync(o.operatorKey).mode & 0o777;
    if ((mode & 0o077) !== 0)
      throw new CustodyCliError(
        `--operator-key ${o.operatorKey} has mode ${mode.toString(8)}; it must be 600 (owner only)`,
        { option: "operator-key" },
      );
    signer = { id: o.operatorId, privateKey: privateKeyFromPkcs8(readFileSync(o.operatorKey)) };
  } catch (err) {
    if (err instanceof CustodyCliError) throw err;
    throw new CustodyCliError(`--operator-key ${o.operatorKey}: ${(err as Error).message}`, { option: "operator-key" });
  }
  return {
    who: { controller: o.operatorId, clock: systemClock, signer },
    trust: { operators: { [o.operatorId]: createPublicKey(signer.privateKey) } },
  };
}
