import type { RangeSet } from "../../lanes/index.ts";
import type { Clock } from "../../core/index.ts";
import type { RecoveryParams } from "../../policies/index.ts";
import type { Transport } from "../../transport/index.ts";

/**
 * What a repair task needs from the controller of its volume, and nothing more. A repair never
 * reads the controller's memory nor writes the control log: it asks through this port, and the
 * controller answers from its folded state and ledger and commits on its behalf (fenced, signed).
 * Two implementations: over NATS request/reply (a repair in another process, repair-port-nats.ts)
 * and in-process (actors/controller/in-process-repair-port.ts, used by the controller's own child
 * repairs and the simulator).
 */
export interface RepairPort {
  /** The controller's current view of `lanes`: control state the repair reads and the ledger's holdings. */
  view(lanes: readonly string[]): Promise<RepairView>;
  /** Commits `admit_holder` for the replacement; resolves with its control-log sequence. */
  admit(replacement: ReplacementAdmission): Promise<number>;
  /**
   * Moves the failed holder's responsibility for `ranges` (what it is still responsible for, within
   * them) to `toHolder`: `prepare_transfer` + `activate_replacement`. Resolves with the sequence of
   * the activation, or 0 when the failed holder was responsible for none of `ranges`.
   */
  activate(t: ReplacementTransfer): Promise<number>;
  /** Refuses releases of `ranges` of `lane` while the repair reads them, until `unprotect(id)`. */
  protect(r: { readonly id: string; readonly lane: string; readonly ranges: RangeSet }): Promise<void>;
  unprotect(id: string): Promise<void>;
  /** How often to look again for the replacement's receipts (ms). */
  readonly pollMs: number;
}

/**
 * What a repair task works through, supplied by whoever starts it (`repairMachineFor`): never part
 * of its machine's context.
 */
export interface RepairPorts {
  /** How the repair reaches its controller (reads and commits go through it, never around it). */
  readonly port: RepairPort;
  /** Where it reads survivors' units and offers them to the replacement. */
  readonly transport: Transport;
  readonly clock: Clock;
}

/** A holder being admitted by `bootstrap` or a repair. */
export interface ReplacementAdmission {
  readonly holderId: string;
  readonly incarnation: number;
  readonly publicKey: Uint8Array;
  readonly failureDomain: string;
}

/** One responsibility move a repair asks for. */
export interface ReplacementTransfer {
  readonly transferId: string;
  readonly lane: string;
  readonly fromHolder: string;
  readonly toHolder: string;
  readonly ranges: RangeSet;
}

/** One holder's verified receipted ranges of a lane, as the controller's ledger holds them. */
export interface RepairHolding {
  readonly holderId: string;
  readonly incarnation: number;
  readonly lane: string;
  readonly retained: RangeSet;
  readonly issuedAt: number;
}

/** The slice of the controller's state a repair reads (see `RepairPort.view`). */
export interface RepairView {
  /** Admitted holders: status (`active`, `failed`, ...) and admitted incarnation. */
  readonly holders: Readonly<Record<string, { readonly status: string; readonly incarnation: number }>>;
  /** Per lane: ranges the control log released per holder, and each holder's responsibility. */
  readonly lanes: Readonly<
    Record<
      string,
      {
        readonly released: Readonly<Record<string, RangeSet>>;
        readonly responsible: Readonly<Record<string, RangeSet>>;
      }
    >
  >;
  readonly holdings: readonly RepairHolding[];
  /** Receipts older than this no longer count as evidence (ms). */
  readonly staleAfterMs: number;
  /** The volume's recovery parameters (for the repair-time estimate). */
  readonly recovery: RecoveryParams;
}
