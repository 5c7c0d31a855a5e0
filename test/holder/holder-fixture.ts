/**
 * Shared arrangements for holder integration tests: real NatsTransport connections to a real
 * nats-server, holder key pairs and a peer directory, a volume writer that sends units within
 * credits, receipt watchers, and a counting FileLayer.
 */
import type { KeyObject } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unitRecordBytes } from "../../arena/segment.ts";
import { systemClock } from "../../core/clock.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { makeTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";
import { decodeReceiptBatch } from "../../custody/receipt-batch.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { startHolder, type Holder } from "../../actors/holder/holder.ts";
import type { HolderConfigInput, ProtectedRamEvidence } from "../../actors/holder/holder-config.ts";
import type { HolderObservation, HolderPorts } from "../../actors/holder/holder-ports.ts";
import type { PeerDirectory } from "../../actors/hop/index.ts";
import { releaseFrontierSpec } from "../../transport/protocol/wire/holder-messages.ts";
import { CreditSender } from "../../actors/hop/index.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { receiptSubject, releaseSubject } from "../../transport/protocol/subjects.ts";
import { decodeMessage, encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";
import { receiptBatchSpec } from "../../custody/custody-messages.ts";

export const VOLUME = "vol1";
export const LANE = "l0";

/** Keys of every holder in a test, and the directory other holders verify receipts with. */
export class KeyRing implements PeerDirectory {
  private readonly keys = new Map<string, { incarnation: number; privateKey: KeyObject; publicKey: KeyObject }>();

  /** Creates (or returns) the key pair of `holderId` at `incarnation`. */
  add(holderId: string, incarnation = 1): KeyObject {
    const kp = generateHolderKeyPair();
    this.keys.set(holderId, { incarnation, privateKey: kp.privateKey, publicKey: publicKeyFromRaw(kp.publicKey) });
    return kp.privateKey;
  }
  privateKey(holderId: string): KeyObject {
    return this.keys.get(holderId)!.privateKey;
  }
  key(holderId: string, incarnation: number): KeyObject | undefined {
    const k = this.keys.get(holderId);
    return k && k.incarnation === incarnation ? k.publicKey : undefined;
  }
  incarnation(holderId: string): number | undefined {
    return this.keys.get(holderId)?.incarnation;
  }
}

export { CountingFileLayer } from "../kit/counting-file-layer.ts";

/** A fresh temp dir for spill files. */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "custody-holder-"));
}

/** Opens a named NatsTransport to `url`. */
export function transport(url: string, name: string): Promise<NatsTransport> {
  return NatsTransport.connect({ servers: url, name });
}

/** A holder config with small arenas and fast receipts, for tests. */
export function holderConfig(holderId: string, over: Partial<HolderConfigInput> & { upstream?: string[]; downstream?: string[] } = {}): HolderConfigInput {
  const { upstream = ["w1"], downstream = [], ...rest } = over;
  return {
    holderId,
    incarnation: 1,
    site: { region: "us-east", az: "use1-az1", host: `${holderId}-host` },
    residency: ["ram"],
    lanes: [{ volume: VOLUME, lane: LANE, upstream, downstream }],
    arena: { segmentBytes: 64 * 1024, limitBytes: 2 * 1024 * 1024, maxOutstandingCredit: 256 * 1024, maxUnitBytes: 32 * 1024 },
    receipts: { maxUnits: 16, maxDelayMs: 5 },
    ...rest,
  };
}

/** Starts a holder on its own connection; returns it with an ordered observation log. */
export async function launchHolder(
  url: string,
  keys: KeyRing,
  cfg: HolderConfigInput,
  extra: Partial<HolderPorts> = {},
): Promise<{ holder: Holder; log: HolderObservation[]; transport: NatsTransport; close(): Promise<void> }> {
  const t = await transport(url, cfg.holderId);
  const log: HolderObservation[] = [];
  if (keys.incarnation(cfg.holderId) === undefined) keys.add(cfg.holderId, cfg.incarnation);
  const holder = await startHolder(cfg, {
    transport: t,
    clock: systemClock,
    privateKey: keys.privateKey(cfg.holderId),
    peers: keys,
    observe: (o) => log.push(o),
    ...extra,
  });
  return {
    holder,
    log,
    transport: t,
    async close() {
      await holder.stop();
      await t.close();
    },
  };
}

let payloadSeed = 1;
/** A unit of `records` records starting at `first`, with `bytes` payload bytes. */
export function unit(first: number, records = 1, bytes = 1024, term = 1): TransportUnit {
  const payload = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) payload[i] = (payloadSeed * 31 + i) & 0xff;
  payloadSeed++;
  const last = first + records - 1;
  return makeTransportUnit({
    volume: VOLUME,
    lane: LANE,
    term,
    firstSeq: first,
    lastSeq: last,
    commitTs: Array.from({ length: records }, (_, i) => 1_700_000_000_000 + first + i),
    payload,
  });
}

/** A volume writer: sends units to one holder strictly within credits. */
export class Writer {
  readonly sender: CreditSender;
  constructor(
    readonly t: NatsTransport,
    holder: string,
    id = "w1",
  ) {
    this.sender = new CreditSender({ transport: t, clock: systemClock, sender: id, holder, volume: VOLUME, lane: LANE, retryMs: 20 }).attach();
  }
  send(u: TransportUnit): void {
    this.sender.send({ data: encodeMessage(unitSpec, u), bytes: unitRecordBytes(u) });
  }
  /** Sends raw bytes as if they were a unit with `bytes` credit (for malformed input tests). */
  sendRaw(data: Uint8Array, bytes: number): void {
    this.sender.send({ data, bytes });
  }
}

/** Collects every receipt batch published on the lane, decoded (not verified), by holder. */
export function watchReceipts(t: NatsTransport): { byHolder(h: string): RangeSet; residencies(h: string): string[]; stop(): void } {
  const seen = new Map<string, { retained: RangeSet; residencies: string[] }>();
  const sub = t.subscribe(receiptSubject(VOLUME, LANE), (m) => {
    const signed = decodeMessage(receiptBatchSpec, m.data);
    const b = decodeReceiptBatch(signed.body);
    const s = seen.get(b.holder.holderId) ?? { retained: RangeSet.EMPTY, residencies: [] };
    for (const r of b.receipts) {
      s.retained = s.retained.union(r.retained);
      s.residencies.push(r.residency.kind);
    }
    seen.set(b.holder.holderId, s);
  });
  return {
    byHolder: (h) => seen.get(h)?.retained ?? RangeSet.EMPTY,
    residencies: (h) => seen.get(h)?.residencies ?? [],
    stop: () => sub.unsubscribe(),
  };
}

/** Polls `cond` every 5 ms until true or `timeoutMs` passes (then throws with `what`). */
export async function eventually(cond: () => boolean, what: string, timeoutMs = 5000, explain?: () => string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for: ${what}${explain ? ` (${explain()})` : ""}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Lets in-flight messages settle for `ms` (used only to show that something does NOT happen). */
export function settle(ms = 150): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Publishes a release frontier (what the controller does after committing `release_ranges`). */
export function publishRelease(t: NatsTransport, holder: string, ranges: [number, number][], epoch = 0, controlSeq = 1): void {
  t.publish(releaseSubject(holder), encodeMessage(releaseFrontierSpec, { holder, volume: VOLUME, lane: LANE, ranges, epoch, controlSeq }));
}

/** Protected-RAM evidence that passes every check (64 MiB held up for 1 s, drained at 100 MiB/s). */
export const goodEvidence = (): ProtectedRamEvidence => ({
  protectedBytes: 64 << 20,
  batteryHealth: 0.95,
  holdUpMs: 1_000,
  autonomousPreservation: true,
  drainBytesPerSec: 100 << 20,
  detectionMs: 10,
  persistenceCompletionMs: 50,
  marginMs: 40,
  measuredAt: Date.now(),
  capabilityGeneration: 7,
});
