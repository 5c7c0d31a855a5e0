import test from "ava";
import { copySources, SourceSuspicion } from "../../actors/controller/copy-sources.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { EvaluationState } from "../../policies/index.ts";

const claim = (lane: string, a: number, b: number) => ({ lane, ranges: RangeSet.of(a, b) });
/** Only what copySources reads: each holder's claims. */
const state = { holders: [
  { id: "h1", claims: [claim("l0", 1, 40)] },
  { id: "h2", claims: [claim("l0", 1, 10), claim("l1", 1, 100)] },
  { id: "h3", claims: [claim("l0", 5, 30)] },
  { id: "h4", claims: [claim("l1", 1, 5)] },
  { id: "t", claims: [claim("l0", 1, 100)] },
] } as unknown as EvaluationState;

test("a copy reads from the holders retaining part of it, the one retaining most first, never from its target", (t) => {
  const s = copySources(state, "l0", RangeSet.of(1, 20), "t", () => false);
  t.deepEqual(s.map((x) => [x.holderId, x.retained.toString()]), [["h1", "1-20"], ["h3", "5-20"], ["h2", "1-10"]]);
});

test("regression sim seed 996059: a source that failed a fetch is asked last, whatever it retains", (t) => {
  const s = copySources(state, "l0", RangeSet.of(1, 20), "t", (h) => h === "h1");
  t.deepEqual(s.map((x) => x.holderId), ["h3", "h2", "h1"]);
});

test("a failed source stays suspect for the window, then is forgotten", (t) => {
  const sus = new SourceSuspicion(10_000);
  t.false(sus.suspect("h1", 0));
  sus.failed("h1", 1_000);
  t.true(sus.suspect("h1", 1_000));
  t.true(sus.suspect("h1", 10_999));
  t.false(sus.suspect("h1", 11_000));
  t.false(sus.suspect("h1", 1_500), "forgotten once the window passed, even if asked about an earlier moment");
  sus.failed("h1", 20_000);
  t.true(sus.suspect("h1", 20_001), "a new failure counts again");
});
