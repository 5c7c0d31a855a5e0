import test from "ava";
import fc from "fast-check";
import { SimulatedClock } from "xstate";
import { Arena } from "../../arena/arena.ts";
import { CreditExceededError } from "../../arena/errors.ts";
import { PinReason } from "../../arena/pin-reason.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { unit } from "./fixtures.ts";

const LANES = ["a", "b", "c"] as const;
const laneArb = fc.constantFrom(...LANES);

type Op =
  | { op: "grant"; lane: string; bytes: number }
  | { op: "admit"; lane: string; size: number; records: number }
  | { op: "overrun"; lane: string }
  | { op: "seal"; lane: string }
  | { op: "release"; lane: string; fraction: number }
  | { op: "pin"; lane: string }
  | { op: "unpin" }
  | { op: "revoke"; lane: string }
  | { op: "grow" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant("grant" as const), lane: laneArb, bytes: fc.integer({ min: 0, max: 40_000 }) }) },
  { weight: 12, arbitrary: fc.record({ op: fc.constant("admit" as const), lane: laneArb, size: fc.double({ min: 0.3, max: 1, noNaN: true }), records: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("overrun" as const), lane: laneArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("seal" as const), lane: laneArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("release" as const), lane: laneArb, fraction: fc.double({ min: 0, max: 1, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("pin" as const), lane: laneArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("unpin" as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("revoke" as const), lane: laneArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("grow" as const) }) },
);

const geometryArb = fc.record({
  segmentBytes: fc.constantFrom(4096, 8192),
  maxUnitFraction: fc.constantFrom(2, 3, 4, 8),
  initialSegments: fc.integer({ min: 2, max: 5 }),
  manifestSegments: fc.integer({ min: 0, max: 1 }),
});

test("credits are never over-granted and no credited unit is refused for lack of space (property)", (t) => {
  fc.assert(
    fc.property(geometryArb, fc.array(opArb, { maxLength: 250 }), fc.array(fc.double({ min: 0.3, max: 1, noNaN: true }), { minLength: 1, maxLength: 16 }), (g, ops, drainSizes) => {
      const S = g.segmentBytes;
      const arena = new Arena(
        {
          segmentBytes: S,
          maxUnitBytes: Math.floor(S / g.maxUnitFraction),
          initialBytes: g.initialSegments * S,
          incrementBytes: S * 2,
          hardLimitBytes: 16 * S,
          manifestReserveBytes: g.manifestSegments * S,
          growthLowWaterBytes: S,
        },
        new SimulatedClock(),
      );
      const nextSeq: Record<string, number> = { a: 1, b: 1, c: 1 };
      const pins: number[] = [];
      for (const o of ops) {
        switch (o.op) {
          case "grant":
            arena.grant("v", o.lane, o.bytes);
            break;
          case "admit": {
            // A sender spends its credits: it sizes the unit to what it may still send, so lanes
            // often run their credits down to zero (where over-granting would show).
            const seq = nextSeq[o.lane]!;
            const overhead = 32 + 8 * o.records;
            const credit = arena.outstanding("v", o.lane);
            const payload = Math.min(Math.floor(o.size * (S / g.maxUnitFraction - overhead)), credit - overhead);
            if (payload < 0) break;
            arena.append(unit(seq, seq + o.records - 1, payload, o.lane)); // must never throw: credited
            nextSeq[o.lane] = seq + o.records;
            break;
          }
          case "overrun": {
            // A unit beyond the lane's credits is refused and changes nothing.
            const seq = nextSeq[o.lane]!;
            const credit = arena.outstanding("v", o.lane);
            const payload = credit - 40 + 1;
            if (payload < 0 || payload + 40 > Math.floor(S / g.maxUnitFraction)) break;
            const before = JSON.stringify(arena.report());
            if (!(safeThrows(() => arena.append(unit(seq, seq, payload, o.lane))) instanceof CreditExceededError)) return false;
            if (JSON.stringify(arena.report()) !== before) return false;
            break;
          }
          case "seal":
            arena.seal("v", o.lane);
            break;
          case "release": {
            const upTo = Math.floor((nextSeq[o.lane]! - 1) * o.fraction);
            if (upTo >= 1) arena.release("v", o.lane, RangeSet.of(1, upTo));
            break;
          }
          case "pin": {
            const ids = arena.segmentsOf("v", o.lane);
            const id = ids[0];
            if (id !== undefined) {
              arena.pin(id, PinReason.pitr_pin);
              pins.push(id);
            }
            break;
          }
          case "unpin": {
            const id = pins.pop();
            if (id !== undefined) arena.unpin(id, PinReason.pitr_pin);
            break;
          }
          case "revoke":
            arena.revoke("v", o.lane);
            break;
          case "grow":
            if (arena.wantsIncrement()) arena.secureIncrement();
            break;
        }
        const r = arena.report();
        let openRemaining = 0;
        for (const lane of LANES) {
          const id = arena.openSegmentOf("v", lane);
          if (id !== undefined) openRemaining += S - arena.describe(id).fill;
        }
        const used = r.ramBytes - openRemaining; // stored bytes plus stranded tails of sealed segments
        if (used + r.outstandingCredits > r.capacityBytes - g.manifestSegments * S) return false;
        if (r.ramBytes > r.capacityBytes) return false;
      }
      // Finally every sender spends all the credits it still holds (sealing now and then):
      // each of those units is credited, so each must land.
      let k = 0;
      for (const lane of LANES) {
        for (let guard = 0; guard < 10_000; guard++) {
          const credit = arena.outstanding("v", lane);
          if (credit < 41) break;
          const frac = drainSizes[k++ % drainSizes.length]!;
          const payload = Math.min(Math.floor(frac * (Math.floor(S / g.maxUnitFraction) - 40)), credit - 40);
          const seq = nextSeq[lane]!;
          arena.append(unit(seq, seq, payload, lane));
          nextSeq[lane] = seq + 1;
          if (k % 7 === 0) arena.seal("v", lane);
        }
      }
      return true;
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

function safeThrows(fn: () => unknown): unknown {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err;
  }
}
