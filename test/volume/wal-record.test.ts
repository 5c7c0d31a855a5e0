import test from "ava";
import fc from "fast-check";
import { decodeRecord, encodeRecord, RECORD_SIZE, RecordFlag, RecordProblem } from "../../volume/index.ts";

const record = fc.record({
  lsn: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  epoch: fc.nat(),
  flag: fc.constantFrom(RecordFlag.Write, RecordFlag.Trim),
  lba: fc.nat(),
  blockCount: fc.integer({ min: 1, max: 0xffff }),
  physicalOffset: fc.nat(),
  dataCrc: fc.nat(0xffffffff),
});

test("a metadata record is 64 bytes and round-trips exactly", (t) => {
  fc.assert(
    fc.property(record, (r) => {
      const slot = new Uint8Array(RECORD_SIZE);
      encodeRecord(r, slot);
      t.deepEqual(decodeRecord(slot), r);
    }),
  );
  t.is(RECORD_SIZE, 64);
});

test("any single flipped bit makes a record invalid (I2), and zeros read as an empty slot", (t) => {
  fc.assert(
    fc.property(record, fc.nat(RECORD_SIZE * 8 - 1), (r, bit) => {
      const slot = new Uint8Array(RECORD_SIZE);
      encodeRecord(r, slot);
      slot[bit >> 3] = slot[bit >> 3]! ^ (1 << (bit & 7));
      return typeof decodeRecord(slot) === "string";
    }),
  );
  t.is(decodeRecord(new Uint8Array(RECORD_SIZE)), RecordProblem.Empty);
});

test("an inline record's CRC covers its payload", (t) => {
  const slot = new Uint8Array(RECORD_SIZE + 4096);
  encodeRecord({ lsn: 1, epoch: 1, flag: RecordFlag.Write, lba: 0, blockCount: 1, physicalOffset: 0, dataCrc: 0, payload: new Uint8Array(4096).fill(3) }, slot);
  t.is(typeof decodeRecord(slot), "object");
  slot[RECORD_SIZE + 100] = 4;
  t.is(decodeRecord(slot), RecordProblem.BadCrc);
});
