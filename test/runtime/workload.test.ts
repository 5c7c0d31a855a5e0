import test from "ava";
import { workloadBlock, workloadWrite } from "../../actors/runtime/workload.ts";

test("a one-block workload write i is block i at LBA i mod blockCount, as before multi-block writes", (t) => {
  for (const i of [0, 5, 63, 64, 130]) t.deepEqual(workloadWrite(i, 1, 64), { lba: i % 64, data: workloadBlock(i) });
});

test("a multi-block workload write covers the i-th whole slot round and round and holds blocks i×blocks … i×blocks+blocks-1", (t) => {
  const w = workloadWrite(5, 16, 100);
  t.is(w.lba, (5 % 6) * 16, "100 blocks hold 6 whole 16-block slots");
  t.is(w.data.length, 16 * 4096);
  t.deepEqual(w.data.subarray(4096 * 3, 4096 * 4), workloadBlock(5 * 16 + 3));
  t.is(workloadWrite(6, 16, 100).lba, 0, "the seventh write starts over at the first slot");
});
