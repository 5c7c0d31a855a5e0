import type { KeyObject } from "node:crypto";
import { RangeSet } from "../lanes/index.ts";
import type { ControlState } from "./control-records.ts";
import type { ReceiptStream } from "./receipt-batch.ts";
import type { ReceiptVerifyContext } from "./receipt-verification.ts";
import { publicKeyFromRaw } from "./signing.ts";

const rs = (m: Readonly<Record<string, RangeSet>>, k: string): RangeSet => m[k] ?? RangeSet.EMPTY;

const keyCache = new Map<string, KeyObject>();
function keyObject(raw: Uint8Array): KeyObject {
  const hex = Buffer.from(raw).toString("hex");
  let k = keyCache.get(hex);
  if (k === undefined) {
    k = publicKeyFromRaw(raw);
    keyCache.set(hex, k);
  }
  return k;
}

/**
 * A receipt verification context from folded control state: admitted keys per incarnation,
 * current epoch and generation, and release frontiers. Failed and retired holders keep their key
 * (what they signed before is still attributable), but only their current incarnation verifies.
 */
export function receiptVerifyContext(s: ControlState, stream: ReceiptStream): ReceiptVerifyContext {
  return {
    stream,
    holderKey: (id, inc) => {
      const h = s.holders[id];
      return h !== undefined && h.incarnation === inc ? keyObject(h.publicKey) : undefined;
    },
    currentIncarnation: (id) => s.holders[id]?.incarnation,
    topologyEpoch: s.topologyEpoch,
    policyGeneration: s.policyGeneration,
    released: (id, volume, lane, obligationId) => {
      const o = s.obligations[obligationId];
      return o !== undefined && o.volume === volume && o.lane === lane ? rs(o.released, id) : RangeSet.EMPTY;
    },
  };
}
