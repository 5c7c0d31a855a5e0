import test from "ava";
import { ControlFenceError, type ControlFenceCode } from "../../custody/control-error.ts";
import { decodeControlEvent, encodeControlEvent, hashControlEvent, type ControlEventBody } from "../../custody/control-event.ts";
import { flushableAt, persistenceChoiceOf } from "../../custody/control-persistence.ts";
import { applyControlEvent, foldControlEntry, INITIAL_CONTROL_STATE, type ControlState } from "../../custody/control-state.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { admit, createOb, eventOn } from "./control-fixtures.ts";

function fold(bodies: ControlEventBody[], from: ControlState = INITIAL_CONTROL_STATE): ControlState {
  let s = from;
  for (const b of bodies) {
    const event = eventOn(s, b);
    s = foldControlEntry(s, { seq: s.lastSeq + 1, event, hash: hashControlEvent(event) });
  }
  return s;
}

const choose = (targets: string[], over: Partial<{ volume: string; lane: string; fromSeq: number; scenarios: string[] }> = {}): ControlEventBody => ({
  type: "choose_persistence",
  volume: over.volume ?? "vol1",
  lane: over.lane ?? "l0",
  fromSeq: over.fromSeq ?? 0,
  targets,
  scenarios: over.scenarios ?? ["us-east power loss"],
});

const base = () => fold([admit("h1"), admit("h2"), admit("relay"), createOb("ob1", ["h1", "h2", "relay"])]);

test("choose_persistence round-trips through the canonical encoding; its body carries its own version", (t) => {
  const s = base();
  const e = eventOn(s, choose(["h2", "h1"], { fromSeq: 40 }));
  const bytes = encodeControlEvent(e);
  const back = decodeControlEvent(bytes);
  t.deepEqual(encodeControlEvent(back), bytes);
  t.like(back, { type: "choose_persistence", volume: "vol1", lane: "l0", fromSeq: 40, targets: ["h2", "h1"], scenarios: ["us-east power loss"] });
});

test("the fold keeps the lane's newest choice: a holder persists only as a target (or below fromSeq), and empty targets withdraw the choice", (t) => {
  let s = base();
  const all = RangeSet.of(1, 100);
  t.is(flushableAt(s.persistence, "h2", "vol1", "l0", all).toString(), "1-100", "no choice: every disk holder flushes");
  s = fold([choose(["h1"], { fromSeq: 51 })], s);
  t.like(persistenceChoiceOf(s.persistence, "vol1", "l0"), { targets: ["h1"], fromSeq: 51, scenarios: ["us-east power loss"] });
  t.is(flushableAt(s.persistence, "h1", "vol1", "l0", all).toString(), "1-100");
  t.is(flushableAt(s.persistence, "h2", "vol1", "l0", all).toString(), "1-50", "below fromSeq the choice does not apply");
  t.is(flushableAt(s.persistence, "h2", "vol1", "l9", all).toString(), "1-100", "another lane has no choice");
  s = fold([choose(["relay", "h2"])], s);
  t.deepEqual(persistenceChoiceOf(s.persistence, "vol1", "l0")?.targets, ["h2", "relay"], "sorted");
  t.true(flushableAt(s.persistence, "h1", "vol1", "l0", all).isEmpty);
  t.is(flushableAt(s.persistence, "h2", "vol1", "l0", all).toString(), "1-100");
  s = fold([choose([])], s);
  t.is(persistenceChoiceOf(s.persistence, "vol1", "l0"), undefined);
  t.is(flushableAt(s.persistence, "h1", "vol1", "l0", all).toString(), "1-100");
  t.deepEqual(s.rejected, []);
});

test("the fold refuses targets that are unknown, inactive or named twice, and a lane without an obligation; a refused choice changes nothing", (t) => {
  const s = fold([choose(["h1"])], base());
  const failed = fold([{ type: "declare_failure", scope: "holder", domain: "none/none", holderIds: ["h2"] }], s);
  const cases: [ControlState, ControlEventBody, ControlFenceCode][] = [
    [s, choose(["nobody"]), "unknown_holder"],
    [failed, choose(["h2"]), "holder_not_active"],
    [s, choose(["h1", "h1"]), "malformed"],
    [s, choose(["h1"], { lane: "l9" }), "unknown_obligation"],
    [s, choose(["h1"], { volume: "vol9" }), "unknown_obligation"],
  ];
  for (const [st, b, code] of cases) {
    const e = eventOn(st, b);
    t.is(t.throws(() => applyControlEvent(st, e), { instanceOf: ControlFenceError })?.code, code);
    const folded = foldControlEntry(st, { seq: st.lastSeq + 1, event: e, hash: hashControlEvent(e) });
    t.deepEqual(folded.persistence, st.persistence, code);
    t.is(folded.rejected.at(-1)?.code, code);
  }
});
