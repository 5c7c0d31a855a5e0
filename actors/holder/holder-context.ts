import type { Tracer } from "@opentelemetry/api";
import type { SpillSet } from "../../arena/index.ts";
import type { Counters } from "../../core/index.ts";
import type { HolderConfig } from "./holder-config.ts";
import type { HolderLane } from "./holder-lane.ts";
import type { HolderInbound, HolderObservation, HolderPorts, HolderTimer } from "./holder-ports.ts";

/**
 * What the holder's parts (resends, edge receipts, protection) see of the holder: its
 * configuration and ports, its lanes, and the few ways they act — count a refusal, record an
 * observation, hand an event back to the actor. Nothing else of HolderCore is reachable from them.
 */
export interface HolderContext {
  readonly config: HolderConfig;
  readonly ports: HolderPorts;
  readonly counters: Counters;
  readonly tracer: Tracer;
  readonly lanes: ReadonlyMap<string, HolderLane>;
  /** The open spill stream, when a flush policy is configured. */
  spill(): SpillSet | undefined;
  /** Counts a refusal and records it. */
  reject(code: string, lane?: string): void;
  observe(o: HolderObservation): void;
  /** Hands `e` to the owning actor (async completions); dropped once stopped. */
  send(e: HolderInbound): void;
  /** Has the owning actor raise timer `e` to itself after `ms` (a delayed event of the machine). */
  later(ms: number, e: HolderTimer): void;
}
