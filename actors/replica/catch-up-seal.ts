import { openPayload, sealPayload, type PayloadIdentity } from "../../transport/protocol/index.ts";

/**
 * What a catch-up chunk carries, sealed like a unit payload (AES-256-GCM under the volume's data
 * key, transport/protocol/wire/unit-payload.ts), so plaintext never crosses the bus. The associated data
 * names the volume, the session (as a lane name with a `.`, which no real lane can have, so a
 * chunk never opens as a unit) and the items' cursor range.
 *
 * Each item is one write record of the payload, its `seq` the item's index in the session:
 * - a snapshot block: `lsn` 0;
 * - a WAL record's current data: `lsn` the record's LSN — or, for every piece but the last of a
 *   record larger than a chunk, minus its LSN (written, but the replica's applied LSN moves only
 *   with the last piece).
 */
export type CatchUpItem =
  | { readonly kind: "block"; readonly lba: number; readonly data: Uint8Array }
  | {
      readonly kind: "record";
      readonly lsn: number;
      readonly lba: number;
      readonly data: Uint8Array;
      readonly last: boolean;
    };

function identity(volume: string, session: string, cursor: number, count: number): PayloadIdentity {
  return { volume, lane: `catchup.${session}`, term: 0, firstSeq: cursor, lastSeq: cursor + count - 1 };
}

/** Seals items `cursor..cursor+items.length-1` of `session`. */
export function sealItems(
  key: Uint8Array,
  volume: string,
  session: string,
  cursor: number,
  items: readonly CatchUpItem[],
): Uint8Array {
  const records = items.map((it, i) => ({
    seq: cursor + i,
    lsn: it.kind === "block" ? 0 : it.last ? it.lsn : -it.lsn,
    lba: it.lba,
    data: it.data,
  }));
  return sealPayload(key, identity(volume, session, cursor, items.length), records);
}

/**
 * Opens a chunk; throws PayloadDecryptError (`payload_decrypt_failed`) when it does not authenticate as exactly these
 * items.
 */
export function openItems(
  key: Uint8Array,
  volume: string,
  session: string,
  cursor: number,
  count: number,
  sealed: Uint8Array,
): CatchUpItem[] {
  return openPayload(key, identity(volume, session, cursor, count), sealed).map((r) =>
    r.lsn === 0
      ? { kind: "block", lba: r.lba, data: r.data }
      : { kind: "record", lsn: Math.abs(r.lsn), lba: r.lba, data: r.data, last: r.lsn > 0 },
  );
}
