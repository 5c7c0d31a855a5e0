import test from "ava";
import fc from "fast-check";
import {
  InvalidSubjectError,
  MAX_TOKEN_LENGTH,
  SUBJECT_FIELDS,
  SubjectKind,
  allOfKind,
  buildSubject,
  creditSubject,
  creditsForLane,
  ctrlSubject,
  eventSubject,
  parseSubject,
  parseSubjectOf,
  receiptSubject,
  receiptsOfVolume,
  releaseSubject,
  statusSubject,
  subjectFilter,
  transferSubject,
  unitSubject,
  unitsToHolder,
  type ParsedSubject,
} from "../../transport/protocol/subjects.ts";
import { isCustodyError } from "../../core/custody-error.ts";

const FORBIDDEN_CHARS = [".", "*", ">", " ", "\t", "\n", "\r", "\u0000", "\u007f", "\u00a0", "\u200b", "\u2028", "\u3000", "\ufeff", "\ud800"];
const FORBIDDEN_RE = /[.*>\s\p{C}]/u;

/** Valid identifiers: ASCII and full-Unicode graphemes without forbidden characters. */
const validToken = fc
  .oneof(fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 40 }), fc.string({ unit: "grapheme", minLength: 1, maxLength: 20 }))
  .filter((s) => s.length <= MAX_TOKEN_LENGTH && !FORBIDDEN_RE.test(s));

/** Invalid identifiers: empty, too long, or containing at least one forbidden character. */
const invalidToken = fc.oneof(
  fc.constant(""),
  fc.constant("x".repeat(MAX_TOKEN_LENGTH + 1)),
  fc.tuple(fc.string({ maxLength: 10 }), fc.constantFrom(...FORBIDDEN_CHARS), fc.string({ maxLength: 10 })).map(([a, bad, b]) => a + bad + b),
);

const kinds = Object.values(SubjectKind);

function sampleOf(kind: SubjectKind, token: (field: string) => string): ParsedSubject {
  const out: Record<string, string> = { kind };
  for (const field of SUBJECT_FIELDS[kind]) out[field] = token(field);
  return out as unknown as ParsedSubject;
}

/** NATS subject matching (`*` = one token, `>` = one or more trailing tokens), to check our filters. */
function natsMatches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length) return false;
    if (f[i] !== "*" && f[i] !== s[i]) return false;
  }
  return f.length === s.length;
}

test("builders produce the documented subject for every kind", (t) => {
  t.is(unitSubject("h1", "vol", "l0"), "custody.v1.unit.h1.vol.l0");
  t.is(creditSubject("h1", "vol", "l0"), "custody.v1.credit.h1.vol.l0");
  t.is(receiptSubject("vol", "l0"), "custody.v1.receipt.vol.l0");
  t.is(ctrlSubject("us-east"), "custody.v1.ctrl.us-east");
  t.is(statusSubject("vol"), "custody.v1.status.vol");
  t.is(releaseSubject("h1"), "custody.v1.release.h1");
  t.is(transferSubject("h2"), "custody.v1.transfer.h2");
  t.is(eventSubject("vol"), "custody.v1.event.vol");
});

test("wildcard filters fix the given identifiers and use * for the rest", (t) => {
  t.is(unitsToHolder("h1"), "custody.v1.unit.h1.*.*");
  t.is(creditsForLane("vol", "l0"), "custody.v1.credit.*.vol.l0");
  t.is(receiptsOfVolume("vol"), "custody.v1.receipt.vol.*");
  t.is(subjectFilter("ctrl"), "custody.v1.ctrl.*");
  t.is(allOfKind("receipt"), "custody.v1.receipt.>");
});

test("parse(build(x)) returns x for every kind and any valid identifiers", (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...kinds), fc.array(validToken, { minLength: 3, maxLength: 3 }), (kind, tokens) => {
      const fields = SUBJECT_FIELDS[kind] as readonly string[];
      const msg = sampleOf(kind, (f) => tokens[fields.indexOf(f)] as string);
      const parsed = parseSubject(buildSubject(msg));
      return JSON.stringify(parsed) === JSON.stringify(msg);
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test("builders reject every bad identifier with InvalidSubjectError naming the token and its role", (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...kinds), fc.integer({ min: 0, max: 2 }), invalidToken, (kind, which, bad) => {
      const fields = SUBJECT_FIELDS[kind] as readonly string[];
      const badField = fields[which % fields.length] as string;
      const msg = sampleOf(kind, (f) => (f === badField ? bad : "ok"));
      try {
        buildSubject(msg);
        return false;
      } catch (err) {
        return err instanceof InvalidSubjectError && err.code === "invalid_subject" && err.detail["token"] === bad && err.detail["role"] === badField && err.message.includes(badField);
      }
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

test("the named builders reject bad identifiers too", (t) => {
  const calls: (() => string)[] = [
    () => unitSubject("a.b", "v", "l"),
    () => unitSubject("h", "v*", "l"),
    () => creditSubject("h", "v", "l>"),
    () => receiptSubject("v v", "l"),
    () => ctrlSubject(""),
    () => statusSubject("v\n"),
    () => releaseSubject("h\u0000"),
    () => transferSubject(">"),
    () => eventSubject("*"),
    () => subjectFilter("receipt", { volume: "a.b" }),
  ];
  for (const call of calls) {
    const err = t.throws(call, { instanceOf: InvalidSubjectError });
    t.true(isCustodyError(err, "invalid_subject"));
  }
});

test("a subject with a wildcard or bad token, wrong prefix, unknown kind or wrong token count does not parse", (t) => {
  for (const subject of [
    "custody.v1.unit.h1.vol",
    "custody.v1.unit.h1.vol.l0.extra",
    "custody.v1.unit.*.vol.l0",
    "custody.v1.receipt.vol.>",
    "custody.v1.ctrl.",
    "custody.v1.status..x",
    "custody.v2.status.vol",
    "other.v1.status.vol",
    "custody.v1.nope.vol",
    "custody.v1.toString.vol",
    "custody.v1.__proto__.vol",
    "custody.v1",
    "",
  ]) {
    t.throws(() => parseSubject(subject), { instanceOf: InvalidSubjectError }, subject);
  }
});

test("parseSubject rejects random strings that are not built subjects, always with InvalidSubjectError", (t) => {
  fc.assert(
    fc.property(fc.string({ maxLength: 60 }), (s) => {
      try {
        const parsed = parseSubject(s);
        return buildSubject(parsed) === s; // anything accepted must be exactly a built subject
      } catch (err) {
        return err instanceof InvalidSubjectError;
      }
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

test("parseSubjectOf checks the kind", (t) => {
  t.deepEqual(parseSubjectOf("receipt", "custody.v1.receipt.vol.l0"), { kind: "receipt", volume: "vol", lane: "l0" });
  t.throws(() => parseSubjectOf("unit", "custody.v1.receipt.vol.l0"), { instanceOf: InvalidSubjectError });
});

test("a filter matches exactly the subjects that agree on its fixed identifiers", (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...kinds), fc.array(validToken, { minLength: 3, maxLength: 3 }), fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), validToken, (kind, tokens, fix, other) => {
      const fields = SUBJECT_FIELDS[kind] as readonly string[];
      const msg = sampleOf(kind, (f) => tokens[fields.indexOf(f)] as string);
      const given: Record<string, string> = {};
      fields.forEach((f, i) => {
        if (fix[i]) given[f] = tokens[i] as string;
      });
      const filter = subjectFilter(kind, given);
      if (!natsMatches(filter, buildSubject(msg)) || !natsMatches(allOfKind(kind), buildSubject(msg))) return false;
      // Changing a fixed identifier must break the match.
      const fixedField = fields.find((f) => given[f] !== undefined);
      if (fixedField === undefined || other === given[fixedField]) return true;
      const changed = sampleOf(kind, (f) => (f === fixedField ? other : (tokens[fields.indexOf(f)] as string)));
      return !natsMatches(filter, buildSubject(changed));
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test("subjectFilter refuses a field the kind does not have", (t) => {
  t.throws(() => subjectFilter("ctrl", { volume: "v" } as never), { instanceOf: InvalidSubjectError });
});
