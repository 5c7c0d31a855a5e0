import type { KeyObject } from "node:crypto";
import type { Clock } from "../../core/index.ts";
import type { Counters } from "../../core/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { SmartWalVolume } from "../../volume/index.ts";
import type { PeerDirectory } from "../hop/index.ts";
import type { UnitOutbox } from "./unit-outbox.ts";

/** Ports of a volume writer: the volume, the data key, and the seams. */
export interface VolumeWriterPorts {
  transport: Transport;
  clock: Clock;
  volume: SmartWalVolume;
  /** The volume's data key, obtained from the key authority (holders never see it). */
  dataKey: Uint8Array;
  /**
   * The writer's Ed25519 signing key for this volume and term (its public half is what holders are
   * given as the volume's writer key). With it every unit goes out attested, one signature per
   * batch of up to 32 units; without it (unit tests, deployments without writer keys) units go unsigned.
   */
  writerKey?: KeyObject;
  /** Public keys of holders, to verify their receipts. */
  peers: PeerDirectory;
  counters?: Counters;
  /** Called with every unit as it is handed to the credit senders (tests, recovery references). */
  onUnit?: (u: TransportUnit) => void;
  /** Called after every verified receipt batch folded into protection (benchmarks, status). */
  onReceipt?: (lane: string) => void;
  /**
   * The durable outbox (production writers always have one): units are made durable there before
   * they are sent, and a local sync covers it too. With it, `recovered` are the units an earlier
   * writer process left unconfirmed: they are shipped again first, re-sealed under this term.
   */
  outbox?: UnitOutbox;
  recovered?: readonly TransportUnit[];
}

/** Where one write went: its LSN and, per lane piece, the lane sequence. */
export interface WriteAck {
  readonly lsn: number;
  readonly pieces: readonly { readonly lane: string; readonly seq: number }[];
}

/** WAL metadata of one write: the LSN of its last block, its first LBA and block count. */
export interface ShipLogEntry {
  readonly lsn: number;
  readonly lba: number;
  readonly blocks: number;
}

/** A consistency manifest: the lane cut that corresponds to one LSN of the volume. */
export interface WriterCut {
  readonly lsn: number;
  readonly lanes: Readonly<Record<string, number>>;
}
