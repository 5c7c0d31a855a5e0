import type { ControlEventBody, ControlLogFollower, ControlState, ReceiptLedger } from "../../custody/index.ts";
import type { RecoveryInFlight } from "../../policies/index.ts";
import type { ControllerConfig } from "./controller-config.ts";
import type { ControllerPorts } from "./controller-ports.ts";

/**
 * What the code that acts for a controller outside its class (failover commits, the in-process
 * repair port) uses of it: configuration and ports, the folded control log and the receipt ledger,
 * the serialized fenced commit, and the recovery holds. ControllerCore implements it; those files
 * depend on this instead of the class, so they import nothing that imports them.
 */
export interface ControllerHandle {
  readonly config: ControllerConfig;
  readonly ports: ControllerPorts;
  /** The verified holdings (see controller-ledger.ts). */
  readonly ledger: Pick<ReceiptLedger, "holdings">;
  readonly follower: ControlLogFollower;
  /** Commits `body` (fenced, chained, optimistic). Throws ControlFenceError / ControlConflictError. */
  commit(body: (s: ControlState) => ControlEventBody): Promise<{ seq: number; state: ControlState }>;
  /** A recovery or repair is reading `ranges` of `lane`: releases of them are refused until `endRecovery`. */
  beginRecovery(r: RecoveryInFlight): void;
  endRecovery(id: string): void;
}
