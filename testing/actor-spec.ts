import type { HolderConfigInput } from "../actors/index.ts";
import type { VolumeWriterConfig } from "../actors/index.ts";

/**
 * What `testing/actor-process.ts` runs, as the JSON file it is given: a holder, or a volume writer
 * that makes `writes` (each a block from `blockData(seed)`) and waits for `contract` to cover them.
 */
export type ActorSpec =
  | { kind: "holder"; url: string; config: HolderConfigInput; privateKeyHex: string; peers: Record<string, string> }
  | { kind: "writer"; url: string; dir: string; blockCount: number; config: VolumeWriterConfig; dataKeyHex: string; peers: Record<string, string>; writes: { lba: number; seed: number }[]; contract: string };
