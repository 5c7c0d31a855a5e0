/**
 * A fetch's page request is tried again once after a quarter of its timeout, and only on a
 * timeout: a lost request or reply costs 1.25 s of a 5 s fetch instead of all of it.
 */
import test from "ava";
import { FetchFailedError, fetchUnits } from "../../actors/repair/custody-reader.ts";
import { encodeMessage, unitBatchSpec } from "../../protocol/index.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { TransportError, TransportErrorCode, type Transport } from "../../transport/index.ts";

/** A transport whose request answers come from `answers` in order (an error is thrown, bytes are the reply). */
function scripted(answers: (TransportErrorCode | "page")[]) {
  const timeouts: number[] = [];
  const transport = {
    request: async (_subject: string, _data: Uint8Array, opts: { timeoutMs: number }) => {
      timeouts.push(opts.timeoutMs);
      const a = answers.shift();
      if (a === "page") return { data: encodeMessage(unitBatchSpec, { holder: "h1", units: [], done: true }) };
      throw new TransportError(a ?? TransportErrorCode.Timeout, "scripted", {});
    },
  } as unknown as Transport;
  return { transport, timeouts };
}

test("regression sim seed 996049: a page whose first request timed out is asked again, and the fetch succeeds", async (t) => {
  const s = scripted([TransportErrorCode.Timeout, "page"]);
  t.deepEqual(await fetchUnits(s.transport, "h1", "vol1", "l0", RangeSet.of(1, 10), 5_000), []);
  t.deepEqual(s.timeouts, [1_250, 5_000], "the first try waits a quarter of the timeout, the second all of it");
});

test("a page that times out twice fails the fetch with FetchFailedError after two tries", async (t) => {
  const s = scripted([TransportErrorCode.Timeout, TransportErrorCode.Timeout, "page"]);
  const err = await t.throwsAsync(fetchUnits(s.transport, "h1", "vol1", "l0", RangeSet.of(1, 10), 5_000), { instanceOf: FetchFailedError });
  t.is(err?.code, "fetch_failed");
  t.is(s.timeouts.length, 2);
});

test("no responders is not retried: the holder is gone, the fetch fails at once", async (t) => {
  const s = scripted([TransportErrorCode.NoResponders, "page"]);
  await t.throwsAsync(fetchUnits(s.transport, "h1", "vol1", "l0", RangeSet.of(1, 10), 5_000), { instanceOf: FetchFailedError });
  t.deepEqual(s.timeouts, [1_250]);
});
