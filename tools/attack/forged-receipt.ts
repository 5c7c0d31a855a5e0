import { readFileSync } from "node:fs";
import {
  makeReceipt,
  makeReceiptBatch,
  privateKeyFromPkcs8,
  receiptBatchSpec,
  signReceiptBatch,
} from "../../custody/index.ts";
import type { RangeSet } from "../../lanes/index.ts";
import { encodeMessage, receiptSubject } from "../../transport/protocol/index.ts";
import type { SecuredNetwork } from "./secured-network.ts";

/**
 * A receipt of `holder` at `incarnation` claiming `retained` (a forgery when signed with someone else's key, or for an
 * incarnation not current).
 */
export function forgedReceiptBatch(
  net: SecuredNetwork,
  holder: string,
  retained: RangeSet,
  signerKeyFile: string,
  incarnation = 2,
) {
  const receipt = makeReceipt({
    holder: { holderId: holder, incarnation },
    volume: net.volume,
    lane: net.lane,
    issuedAt: Date.now(),
    writerTerm: 1,
    topologyEpoch: 1,
    policyGeneration: 1,
    prefixBase: 1,
    payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
    obligation: {
      obligationId: `${net.volume}-${net.lane}`,
      releaseAuthority: { kind: "control_log", region: net.controlRegion },
    },
    extensions: [],
    receiptSeq: 999_999,
    retained,
    residency: { kind: "ram", capabilityGeneration: 0, observedAt: Date.now() },
  });
  const batch = makeReceiptBatch(
    { volume: net.volume, lane: net.lane, subject: receiptSubject(net.volume, net.lane) },
    { holderId: holder, incarnation },
    Date.now(),
    [receipt],
  );
  const signed = signReceiptBatch(batch, privateKeyFromPkcs8(readFileSync(signerKeyFile)));
  return encodeMessage(receiptBatchSpec, { body: signed.body, signature: signed.signature });
}
