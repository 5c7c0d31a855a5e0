import test from "ava";
import fc from "fast-check";
import { seededRandom } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { AuditBook, AuditBudget, AuditOutcome, AuditState, auditDigest, auditVerdict, planAudit, sampleSeqs, type AuditedUnit } from "../../policies/index.ts";

const unit = (firstSeq: number, lastSeq: number, fill: number, term = 1): AuditedUnit => ({ firstSeq, lastSeq, term, payload: new Uint8Array(64).fill(fill) });
const units = [unit(1, 4, 1), unit(5, 8, 2), unit(9, 12, 3), unit(13, 16, 4)];
const nonce = new Uint8Array(32).fill(7);

test("sampled sequences are distinct, inside the ranges and at most k", (t) => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(1000), fc.nat(50)), { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 40 }), fc.nat(), (runs, k, seed) => {
      const ranges = RangeSet.from(runs.map(([a, n]) => [a, a + n] as const));
      const s = sampleSeqs(ranges, k, seededRandom(seed));
      return ranges.coversAll(s) && s.count <= k && s.count === Math.min(k, ranges.count);
    }),
  );
  t.pass();
});

test("the audit digest depends on the nonce and on every payload byte of the challenged units", (t) => {
  const seqs = RangeSet.of(6).add(10);
  const d = auditDigest(nonce, units, seqs);
  t.deepEqual(d.covered.toJSON(), [[6, 6], [10, 10]]);
  t.is(d.bytesRead, 128);
  t.notDeepEqual(auditDigest(new Uint8Array(32).fill(8), units, seqs).digest, d.digest);
  const flipped = units.map((u) => (u.firstSeq === 9 ? { ...u, payload: Uint8Array.from(u.payload, (b, i) => (i === 63 ? b ^ 1 : b)) } : u));
  t.notDeepEqual(auditDigest(nonce, flipped, seqs).digest, d.digest);
  // Units that hold no challenged sequence do not enter it; a unit kept twice counts once.
  t.deepEqual(auditDigest(nonce, [units[1]!, units[2]!, units[2]!], seqs).digest, d.digest);
});

test("a holder that kept only unit headers cannot answer: the verdict is failed (digest mismatch)", (t) => {
  const challenged = RangeSet.of(2).add(14);
  const headersOnly = units.map((u) => ({ ...u, payload: new Uint8Array(0) }));
  const a = auditDigest(nonce, headersOnly, challenged);
  const v = auditVerdict({ nonce, challenged, answer: a, referenceUnits: units, stillClaimed: RangeSet.of(1, 16) });
  t.is(v.outcome, AuditOutcome.Failed);
  t.is(v.reason, "digest mismatch");
});

test("an honest answer passes; no answer is a timeout", (t) => {
  const challenged = RangeSet.of(2).add(14);
  const honest = auditVerdict({ nonce, challenged, answer: auditDigest(nonce, [...units].reverse(), challenged), referenceUnits: units, stillClaimed: RangeSet.of(1, 16) });
  t.is(honest.outcome, AuditOutcome.Passed);
  t.is(auditVerdict({ nonce, challenged, answer: undefined, referenceUnits: units, stillClaimed: RangeSet.of(1, 16) }).outcome, AuditOutcome.Timeout);
});

test("leaving out a sequence the holder still claims fails; one it released since the challenge is excused", (t) => {
  const challenged = RangeSet.of(2).add(14);
  const partial = auditDigest(nonce, units.slice(1), challenged); // covers 14 only
  t.is(auditVerdict({ nonce, challenged, answer: partial, referenceUnits: units, stillClaimed: RangeSet.of(1, 16) }).outcome, AuditOutcome.Failed);
  t.is(auditVerdict({ nonce, challenged, answer: partial, referenceUnits: units, stillClaimed: RangeSet.of(5, 16) }).outcome, AuditOutcome.Passed);
  const none = auditDigest(nonce, [], challenged);
  t.is(auditVerdict({ nonce, challenged, answer: none, referenceUnits: units, stillClaimed: RangeSet.EMPTY }).outcome, AuditOutcome.Void);
});

test("a reference that lacks the units voids the audit instead of failing the holder", (t) => {
  const challenged = RangeSet.of(2).add(14);
  const v = auditVerdict({ nonce, challenged, answer: auditDigest(nonce, units, challenged), referenceUnits: units.slice(0, 2), stillClaimed: RangeSet.of(1, 16) });
  t.is(v.outcome, AuditOutcome.Void);
});

test("an answer covering sequences that were not challenged fails", (t) => {
  const challenged = RangeSet.of(2);
  const answer = { digest: new Uint8Array(32), covered: RangeSet.of(2, 3) };
  t.is(auditVerdict({ nonce, challenged, answer, referenceUnits: units, stillClaimed: RangeSet.of(1, 16) }).outcome, AuditOutcome.Failed);
});

test("planning draws the reference among other claimants, preferring proven ones, and samples what both claim", (t) => {
  const claims = new Map([
    ["a", RangeSet.of(1, 100)],
    ["b", RangeSet.of(50, 200)],
    ["c", RangeSet.of(1, 10)],
    ["d", RangeSet.of(500, 600)],
  ]);
  for (let seed = 0; seed < 50; seed++) {
    const p = planAudit("a", claims, new Set(["c"]), 5, seededRandom(seed))!;
    t.is(p.reference, "b");
    t.true(RangeSet.of(50, 100).coversAll(p.seqs));
    t.is(p.seqs.count, 5);
  }
  t.is(planAudit("d", claims, new Set(), 5, seededRandom(1)), undefined);
  t.is(planAudit("c", claims, new Set(["a"]), 5, seededRandom(1))!.reference, "a"); // only candidate
});

test("a failed or timed-out audit makes the holder unproven until a later audit passes; void changes nothing", (t) => {
  const book = new AuditBook();
  t.deepEqual(book.rows(["h"]).map((r) => r.state), [AuditState.Pending]);
  t.true(book.record("h", AuditOutcome.Passed, 1));
  t.true(book.record("h", AuditOutcome.Timeout, 2));
  t.deepEqual([...book.unproven()], ["h"]);
  t.false(book.record("h", AuditOutcome.Void, 3));
  t.deepEqual([...book.unproven()], ["h"]);
  t.true(book.record("h", AuditOutcome.Passed, 4));
  t.deepEqual([...book.unproven()], []);
  t.deepEqual(book.rows(["h"])[0], { holder: "h", state: AuditState.Passed, lastAuditAtMs: 4, passed: 2, failed: 0, timedOut: 1, voided: 1 });
});

test("the byte budget refuses new challenges once a period's bytes are spent, and renews each period", (t) => {
  const b = new AuditBudget(1000, 60_000);
  t.true(b.allows(0));
  b.spend(600, 0);
  t.true(b.allows(10));
  b.spend(600, 10);
  t.false(b.allows(20));
  t.true(b.allows(60_000));
  t.is(b.spent, 0);
});
