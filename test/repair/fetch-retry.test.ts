/**
 * A fetch's page request is sent again at a quarter and at half of its timeout while no reply has
 * come; every copy waits until the same deadline and the first reply wins. A lost request or reply
 * costs 1.25 s of a 5 s fetch, two lost ones 2.5 s, and a slow reply is taken when it comes.
 */
import test from "ava";
import { FetchFailedError, fetchUnits } from "../../actors/repair/custody-reader.ts";
import { encodeMessage, unitBatchSpec } from "../../transport/protocol/index.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { SimulatedClock } from "../../sim/index.ts";
import { TransportError, TransportErrorCode, type Transport } from "../../transport/index.ts";

/** How the k-th request is answered: lost (times out), a reply after `ms`, or no responders. */
type Answer = "lost" | { readonly replyAfterMs: number } | "no_responders" | "throws";

/** A transport on a virtual clock whose request answers come from `answers` in order. */
function scripted(answers: Answer[]) {
  const clock = new SimulatedClock();
  const sent: { atMs: number; timeoutMs: number }[] = [];
  /** Virtual times at which a reply or a timeout was delivered (the clock runs on after the fetch ends). */
  const replies: number[] = [];
  const timeouts: number[] = [];
  const transport = {
    request: (_subject: string, _data: Uint8Array, opts: { timeoutMs: number }) => {
      sent.push({ atMs: clock.now(), timeoutMs: opts.timeoutMs });
      const a = answers.shift() ?? "lost";
      if (a === "throws") throw new TransportError(TransportErrorCode.Closed, "scripted: connection closed", {});
      return new Promise((resolve, reject) => {
        const timeout = () => {
          timeouts.push(clock.now());
          reject(new TransportError(TransportErrorCode.Timeout, "scripted", {}));
        };
        if (a === "no_responders") return reject(new TransportError(TransportErrorCode.NoResponders, "scripted", {}));
        if (a === "lost" || a.replyAfterMs >= opts.timeoutMs) return void clock.setTimeout(timeout, opts.timeoutMs);
        clock.setTimeout(() => {
          replies.push(clock.now());
          resolve({ data: encodeMessage(unitBatchSpec, { holder: "h1", units: [], done: true }) });
        }, a.replyAfterMs);
      });
    },
  } as unknown as Transport;
  // One timer at a time, with every promise settled in between (as the simulator runs).
  const fetch = async () => {
    let ended = false;
    const p = fetchUnits(transport, "h1", "vol1", "l0", RangeSet.of(1, 10), 5_000, { clock }).finally(() => (ended = true));
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (ended || !clock.step()) return p;
    }
  };
  return { clock, sent, replies, timeouts, fetch };
}

test("regression sim seed 996049: a page whose first request was lost is asked again at a quarter of the timeout, and the fetch succeeds", async (t) => {
  const s = scripted(["lost", { replyAfterMs: 40 }]);
  t.deepEqual(await s.fetch(), []);
  t.deepEqual(s.replies, [1_290], "answered 40 ms after the second copy went out");
  t.deepEqual(s.sent, [{ atMs: 0, timeoutMs: 5_000 }, { atMs: 1_250, timeoutMs: 3_750 }], "every copy waits until the same deadline");
});

test("regression sim seed 857158: two lost copies of a page cost half the timeout, not a timeout and a quarter", async (t) => {
  const s = scripted(["lost", "lost", { replyAfterMs: 40 }]);
  t.deepEqual(await s.fetch(), []);
  t.deepEqual(s.replies, [2_540]);
  t.deepEqual(s.sent.map((x) => x.atMs), [0, 1_250, 2_500]);
});

test("a slow reply to the first copy is taken when it comes, not dropped and asked for again", async (t) => {
  const s = scripted([{ replyAfterMs: 1_800 }, "lost"]);
  t.deepEqual(await s.fetch(), []);
  t.deepEqual(s.replies, [1_800]);
  t.deepEqual(s.sent.map((x) => x.atMs), [0, 1_250], "one extra copy went out at 1,250 ms; none after the reply");
});

test("a page whose every copy is lost fails the fetch with FetchFailedError at the deadline", async (t) => {
  const s = scripted(["lost", "lost", "lost", { replyAfterMs: 1 }]);
  const err = await t.throwsAsync(s.fetch(), { instanceOf: FetchFailedError });
  t.is(err?.code, "fetch_failed");
  t.deepEqual(s.timeouts, [5_000, 5_000, 5_000], "all three copies end at the one deadline");
  t.is(s.sent.length, 3);
});

test("no responders is not retried: the holder is gone, the fetch fails at once", async (t) => {
  const s = scripted(["no_responders", { replyAfterMs: 1 }]);
  await t.throwsAsync(s.fetch(), { instanceOf: FetchFailedError });
  t.is(s.clock.now(), 0);
  t.is(s.sent.length, 1);
  t.is(s.clock.pending, 0, "no copy is left scheduled");
});

test("a copy whose request throws at once (connection closed) fails the fetch with FetchFailedError, with nothing left scheduled", async (t) => {
  const s = scripted(["lost", "throws", { replyAfterMs: 1 }]);
  const err = await t.throwsAsync(s.fetch(), { instanceOf: FetchFailedError });
  t.is(err?.code, "fetch_failed");
  t.deepEqual(s.sent.map((x) => x.atMs), [0, 1_250]);
  t.is(s.clock.pending, 1, "only the first copy's own timeout is left on the clock");
});
