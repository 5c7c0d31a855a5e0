import { Decoder, Encoder } from "@msgpack/msgpack";
import type { KeyObject } from "node:crypto";
import { RangeSet } from "../../lanes/range-set.ts";
import type { Clock } from "../../core/clock.ts";
import type { ResidencyEvidence } from "../../custody/evidence.ts";
import { makeReceipt, type CustodyReceipt, type ReceiptFields } from "../../custody/receipt.ts";
import { makeReceiptBatch, receiptStream, signReceiptBatch, encodeReceiptBatch, type ReceiptBatch, type SignedReceiptBatch } from "../../custody/receipt-batch.ts";
import type { ReceiptVerifyContext } from "../../custody/receipt-verification.ts";
import { generateHolderKeyPair, publicKeyFromRaw, signBytes, type HolderKeyPair } from "../../custody/signing.ts";

/** Shared, deterministic-enough fixtures for the custody receipt tests. */
export const VOL = "vol1";
export const LANE = "l0";
export const STREAM = receiptStream(VOL, LANE);
export const T0 = 1_800_000_000_000;

export const keys: Record<string, HolderKeyPair> = {
  h1: generateHolderKeyPair(),
  h2: generateHolderKeyPair(),
  relay: generateHolderKeyPair(),
};

/** A manual clock for staleness tests. */
export function manualClock(start = T0): Clock & { advance(ms: number): void } {
  let t = start;
  return {
    now: () => t,
    setTimeout: () => undefined,
    clearTimeout: () => undefined,
    advance(ms) {
      t += ms;
    },
  };
}

export const ram = (observedAt = T0): ResidencyEvidence => ({ kind: "ram", capabilityGeneration: 1, observedAt });
export const disk = (observedAt = T0): ResidencyEvidence => ({ kind: "disk", capabilityGeneration: 1, observedAt, file: "/var/wal/seg-1", offset: 0, length: 4096, syncedAt: observedAt });
export const protectedRam = (observedAt = T0): ResidencyEvidence => ({
  kind: "protected_ram",
  capabilityGeneration: 1,
  observedAt,
  protectedCapacityBytes: 1 << 30,
  holdUpMs: 5000,
  batteryHealthPct: 95,
  preservationPath: "nvdimm-save",
  recoversMetadata: true,
  dependencies: ["psu-a"],
});

/** A v1 receipt of `holderId` incarnation 1 on STREAM with sensible defaults. */
export function receipt(over: Partial<ReceiptFields> & { seq: number; ranges?: [number, number][]; holderId?: string; incarnation?: number }): CustodyReceipt {
  const { seq, ranges, holderId, incarnation, ...rest } = over;
  return makeReceipt({
    holder: { holderId: holderId ?? "h1", incarnation: incarnation ?? 1 },
    volume: VOL,
    lane: LANE,
    receiptSeq: seq,
    issuedAt: T0,
    writerTerm: 1,
    topologyEpoch: 1,
    policyGeneration: 1,
    retained: RangeSet.from(ranges ?? [[1, 10]]),
    prefixBase: 1,
    payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
    residency: ram(),
    obligation: { obligationId: "ob1", releaseAuthority: { kind: "control_log", region: "us-east" } },
    extensions: [],
    ...rest,
  });
}

/** A batch of `receipts` (all of the same holder incarnation) on STREAM. */
export function batchOf(receipts: CustodyReceipt[], stream = STREAM): ReceiptBatch {
  const first = receipts[0]!;
  return makeReceiptBatch(stream, first.holder, T0, receipts);
}

/** Signs `batch` with the key of its holder (or `signer`). */
export function signed(batch: ReceiptBatch, signer?: KeyObject): SignedReceiptBatch {
  return signReceiptBatch(batch, signer ?? keys[batch.holder.holderId]!.privateKey);
}

/**
 * Encodes `batch`, lets `mutate` edit the positional msgpack form (to craft batches the encoder
 * would never produce), re-encodes and signs with `signer`.
 */
export function crafted(batch: ReceiptBatch, mutate: (raw: unknown[]) => void, signer?: KeyObject): SignedReceiptBatch {
  const raw = new Decoder().decode(encodeReceiptBatch(batch)) as unknown[];
  mutate(raw);
  const body = new Encoder().encode(raw);
  return { body, signature: signBytes(signer ?? keys[batch.holder.holderId]!.privateKey, body) };
}

/** A verify context: h1 and h2 admitted at incarnation 1, epoch 1, generation 1, nothing released. */
export function context(over: Partial<{ stream: typeof STREAM; incarnations: Record<string, number>; epoch: number; generation: number; released: Record<string, RangeSet> }> = {}): ReceiptVerifyContext {
  const incarnations = over.incarnations ?? { h1: 1, h2: 1, relay: 1 };
  const pub = Object.fromEntries(Object.entries(keys).map(([h, k]) => [h, publicKeyFromRaw(k.publicKey)]));
  return {
    stream: over.stream ?? STREAM,
    holderKey: (h, inc) => (incarnations[h] === inc ? pub[h] : undefined),
    currentIncarnation: (h) => incarnations[h],
    topologyEpoch: over.epoch ?? 1,
    policyGeneration: over.generation ?? 1,
    released: (h, _v, _l, o) => over.released?.[`${h}/${o}`] ?? RangeSet.EMPTY,
  };
}
