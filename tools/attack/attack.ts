import type { AttackerConnection } from "./principal.ts";
import type { NetworkState } from "./network-state.ts";
import type { SecuredNetwork } from "./secured-network.ts";

/** What an attack may use. */
export interface AttackContext {
  readonly net: SecuredNetwork;
  /** A connection with the credentials of `instance` (or `operator`) in `region` (default east), kept for the run. */
  as(instance: string, region?: string): Promise<AttackerConnection>;
  /** The network's state now. */
  read(): Promise<NetworkState>;
  /** Counters that grew since `before` in no quiet interval (rejections, not progress), as `process.counter`. */
  rejections(before: NetworkState, after: NetworkState): string[];
}

/** One attack: `run` returns how it was refused, or undefined when it was not. */
export interface Attack {
  readonly name: string;
  run(ctx: AttackContext, before: NetworkState): Promise<{ refusal?: string; changed?: string[]; note?: string }>;
}
