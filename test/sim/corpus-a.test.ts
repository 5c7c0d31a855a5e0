import test from "ava";
import { runCorpusChunk } from "./corpus.ts";

// Half of the fixed 300-seed CI corpus (1–10 holders, production actors); the other half is in corpus-b.test.ts so both run in parallel.
for (let first = 1; first <= 150; first += 15) {
  test.serial(`corpus seeds ${first}..${first + 14}: no invariant is violated and coverage comes back after every strike`, async (t) => {
    const shapes = await runCorpusChunk(t, first, first + 14);
    t.true(shapes.size > 1, "the chunk explores more than one fault schedule");
  });
}
