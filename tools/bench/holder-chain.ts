import type { KeyObject } from "node:crypto";
import { CreditSender, startHolder, type Holder, type HolderConfigInput } from "../../actors/index.ts";
import { releaseFrontierSpec } from "../../transport/protocol/index.ts";
import { systemClock } from "../../core/index.ts";
import {
  decodeReceiptBatch,
  generateHolderKeyPair,
  publicKeyFromRaw,
  receiptBatchSpec,
  WriterKeyring,
  writerUnitSigner,
} from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { decodeMessage, encodeMessage, receiptSubject, releaseSubject } from "../../transport/protocol/index.ts";
import { type NatsTransport } from "../../transport/index.ts";
import { encodedUnits, type EncodedUnits } from "./encoded-units.ts";

/**
 * bench:holder's custody chains: writer → h1 → … → hN on a fresh lane of one volume, each party
 * on its own connection, with a controller loop that releases what the last hop receipted.
 */

export const VOLUME = "vbench";
/** Credit one upstream may hold (the holder config below) and how far raw runs ahead of the server. */
export const CREDIT_WINDOW = 8 << 20;
/**
 * Receipt batching of the benched holders: a signed batch per 256 units or 5 ms (the default deadline), whichever
 * first.
 */
export const RECEIPTS = { maxUnits: 256, maxDelayMs: 5 };
let laneCounter = 0;

export interface Chain {
  writer: CreditSender;
  ids: string[];
  lane: string;
  close(): Promise<void>;
}

/** How a chain's parties reach the bus, and whether its units are signed. */
export interface ChainMode {
  /** A new connection for one party (plain, or authenticated over TLS). */
  connect(name: string): Promise<NatsTransport>;
  /** Writer-authenticated units: the writer signs, every holder verifies against `publicKey`. */
  signed?: { readonly privateKey: KeyObject; readonly publicKey: Uint8Array };
}

/** The configuration of hop `i` of a bench chain: RAM only, one lane, receipts as RECEIPTS. */
export function benchHolderConfig(
  holderId: string,
  i: number,
  lane: string,
  upstream: string,
  downstream: string | undefined,
  unitBytes: number,
): HolderConfigInput {
  return {
    holderId,
    incarnation: 1,
    site: { region: "us-east", az: `az${i}`, host: `host${i}` },
    residency: ["ram"],
    lanes: [{ volume: VOLUME, lane, upstream: [upstream], downstream: downstream === undefined ? [] : [downstream] }],
    arena: {
      segmentBytes: 1 << 20,
      limitBytes: 96 << 20,
      maxOutstandingCredit: CREDIT_WINDOW,
      maxUnitBytes: Math.max(128 * 1024, unitBytes * 2),
    },
    receipts: RECEIPTS,
  };
}

/** A fresh lane name and holder ids for a chain of `hops`. */
export function freshLane(hops: number): { lane: string; ids: string[] } {
  const lane = `l${++laneCounter}`;
  return { lane, ids: Array.from({ length: hops }, (_, i) => `bh${laneCounter}x${i}`) };
}

/** Starts writer → h1 → ... → hN on a fresh lane; every hop has its own connection. */
export async function chain(hops: number, unitBytes: number, mode: ChainMode): Promise<Chain> {
  const { lane, ids } = freshLane(hops);
  const keys = ids.map(() => generateHolderKeyPair());
  const publicKeys = keys.map((k) => publicKeyFromRaw(k.publicKey));
  const peers = {
    key: (h: string, inc: number) => {
      const i = ids.indexOf(h);
      return i >= 0 && inc === 1 ? publicKeys[i] : undefined;
    },
    incarnation: (h: string) => (ids.includes(h) ? 1 : undefined),
  };
  const writerKeys = mode.signed && new WriterKeyring().name(VOLUME, 0, mode.signed.publicKey);
  const holders: Holder[] = [];
  for (let i = hops - 1; i >= 0; i--) {
    const cfg = benchHolderConfig(
      ids[i]!,
      i,
      lane,
      i === 0 ? "writer" : ids[i - 1]!,
      i === hops - 1 ? undefined : ids[i + 1]!,
      unitBytes,
    );
    const t = await mode.connect(ids[i]!);
    holders.unshift(
      await startHolder(cfg, {
        transport: t,
        clock: systemClock,
        privateKey: keys[i]!.privateKey,
        peers,
        ...(writerKeys ? { writerKeys } : {}),
      }),
    );
  }
  const wt = await mode.connect(`writer-${lane}`);
  const attest = mode.signed && writerUnitSigner(mode.signed.privateKey);
  const writer = new CreditSender({
    transport: wt,
    clock: systemClock,
    sender: "writer",
    holder: ids[0]!,
    volume: VOLUME,
    lane,
    retryMs: 20,
    ...(attest ? { attest } : {}),
  }).attach();
  return {
    writer,
    ids,
    lane,
    async close() {
      writer.close();
      for (const h of holders) await h.stop();
    },
  };
}

/** What the last hop has receipted, and a listener for its next receipt batch. */
export interface LastHopWatch {
  covered(): RangeSet;
  onReceipt(fn: () => void): void;
  stop(): void;
}

/** Watches receipts of the last hop and releases what it covers at every hop (a controller). */
export async function watchLastHop(c: Chain, mode: ChainMode): Promise<LastHopWatch> {
  const t = await mode.connect(`ctl-${c.lane}`);
  const last = c.ids[c.ids.length - 1]!;
  let covered = RangeSet.EMPTY;
  /** Receipts came since the last release: an idle chain (a long-running holder between slices) gets no releases. */
  let fresh = false;
  let listener: (() => void) | undefined;
  const sub = t.subscribe(receiptSubject(VOLUME, c.lane), (m) => {
    const b = decodeReceiptBatch(decodeMessage(receiptBatchSpec, m.data).body);
    if (b.holder.holderId !== last) return;
    for (const r of b.receipts) covered = covered.union(r.retained);
    fresh = true;
    listener?.();
  });
  await t.flush();
  let seq = 0;
  const releaser = setInterval(() => {
    if (!fresh) return;
    fresh = false;
    for (const h of c.ids) {
      t.publish(
        releaseSubject(h),
        encodeMessage(releaseFrontierSpec, {
          holder: h,
          volume: VOLUME,
          lane: c.lane,
          ranges: covered.toJSON(),
          epoch: 0,
          controlSeq: ++seq,
        }),
      );
    }
  }, 10);
  return {
    covered: () => covered,
    onReceipt: (fn) => (listener = fn),
    stop: () => {
      clearInterval(releaser);
      sub.unsubscribe();
    },
  };
}

/** A chain being driven: its watcher and the next sequence its writer sends. */
export interface Driven {
  c: Chain;
  w: LastHopWatch;
  next: number;
}

/**
 * The chain's next `count` units of `size`, encoded (with their digests) before any clock starts:
 * that is the writer's work, not the holder's.
 */
export function nextUnits(d: Driven, size: number, count: number): { from: number; units: EncodedUnits } {
  const from = d.next;
  d.next += count;
  return { from, units: encodedUnits(VOLUME, d.c.lane, size, count, from) };
}

/**
 * Sends `units` as a streaming writer produces them (each unit sent makes room for the next, at
 * most two credit windows queued) and resolves once the last hop has receipted all of them.
 */
export function carry(d: Driven, size: number, { from, units }: { from: number; units: EncodedUnits }): Promise<void> {
  const to = from + units.count - 1;
  const ahead = Math.max(2, Math.floor((2 * CREDIT_WINDOW) / size));
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  d.w.onReceipt(() => {
    if (d.w.covered().covers(from, to)) done();
  });
  let next = from;
  const feed = (): void => {
    while (next <= to && d.c.writer.backlog.units < ahead) {
      const u = units.at(next++ - from);
      d.c.writer.send({ data: u.data, bytes: u.bytes, onSent: feed });
    }
  };
  feed();
  return finished;
}
