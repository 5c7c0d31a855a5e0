import test from "ava";
import { parseHolderConfig, HolderConfigError } from "../../actors/holder/holder-config.ts";
import { identifierProblem, isIdentifier, MAX_IDENTIFIER_LENGTH } from "../../core/identifier.ts";
import { makeTransportUnit, validateTransportUnit, InvalidUnitError } from "../../lanes/transport-unit.ts";
import { InvalidSubjectError, receiptSubject } from "../../transport/protocol/subjects.ts";

const holderInput = (holderId: string) => ({
  holderId,
  incarnation: 1,
  site: { region: "us-east", az: "a", host: "x" },
  residency: ["ram" as const],
  lanes: [{ volume: "v", lane: "l", upstream: ["w"] }],
  arena: { limitBytes: 1 << 22 },
  receipts: {},
});

const validUnit = () => makeTransportUnit({ volume: "v", lane: "l", term: 1, firstSeq: 1, lastSeq: 1, commitTs: [0], payload: new Uint8Array(4) });
const unitNamed = (volume: string) => ({ ...validUnit(), volume });

const accepted = ["h1", "use1-az1", "vol_7", "Ä-lane", "x".repeat(MAX_IDENTIFIER_LENGTH)];
const refused = ["", "h.1", "a*", "a>", "a b", "tab\there", "bell\u0007", "zero\u200bwidth", "x".repeat(MAX_IDENTIFIER_LENGTH + 1)];

test("the identifier rule accepts subject-token names and says why it refuses the others", (t) => {
  for (const name of accepted) t.is(identifierProblem(name), undefined, name);
  for (const name of refused) t.is(typeof identifierProblem(name), "string", JSON.stringify(name));
  t.is(identifierProblem(42), "not a string");
  t.false(isIdentifier(undefined));
});

test("holder configuration, transport units and subjects refuse exactly the same names (one identifier rule)", (t) => {
  for (const name of [...accepted, ...refused]) {
    const ok = isIdentifier(name);
    const label = JSON.stringify(name);
    if (ok) {
      t.is(parseHolderConfig(holderInput(name)).holderId, name, label);
      t.notThrows(() => receiptSubject(name, "l"), label);
    } else {
      const e = t.throws(() => parseHolderConfig(holderInput(name)), { instanceOf: HolderConfigError }, label);
      t.is(e?.detail["field"], "holderId", label);
      t.throws(() => receiptSubject(name, "l"), { instanceOf: InvalidSubjectError }, label);
    }
  }
});

test("a transport unit whose volume breaks the identifier rule is refused with invalid_unit", (t) => {
  // Built valid, then renamed: validation must refuse the name before it looks at the digest.
  for (const name of refused) {
    const e = t.throws(() => validateTransportUnit(unitNamed(name)), { instanceOf: InvalidUnitError }, JSON.stringify(name));
    t.is(e?.code, "invalid_unit");
  }
  t.notThrows(() => validateTransportUnit(makeTransportUnit({ volume: "Ä-lane", lane: "l", term: 1, firstSeq: 1, lastSeq: 1, commitTs: [0], payload: new Uint8Array(4) })));
});

test("the cache of recently valid identifiers never admits an invalid one, also after more valid names than it keeps", (t) => {
  for (let i = 0; i < 5000; i++) t.is(identifierProblem(`vol-${i}`), undefined);
  t.is(identifierProblem("vol-1"), undefined);
  t.regex(identifierProblem("vol-1.x") ?? "", /forbidden character "\."/);
  t.regex(identifierProblem("vol 1") ?? "", /forbidden character/);
  t.is(identifierProblem(""), "empty");
});
