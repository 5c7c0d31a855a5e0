import test from "ava";
import { runCorpusChunk } from "./corpus.ts";

// Half of the fixed 300-seed CI corpus (1–10 holders); the other half is in corpus-b.test.ts so both run in parallel.
for (let first = 1; first <= 150; first += 25) {
  test(`corpus seeds ${first}..${first + 24}: no invariant is violated`, (t) => {
    const shapes = runCorpusChunk(t, first, first + 24);
    t.true(shapes.size > 1, "the chunk explores more than one fault schedule");
  });
}
