/**
 * What a replicated control log's leader election looks like to nats.js (a publish timing out,
 * "no responders" while no leader serves the subject, a 503 from the JetStream API) is retried
 * within a budget; anything else (a lost expected-last-sequence race, a missing stream) is not.
 */
import test from "ava";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { errors as natsErrors } from "@nats-io/transport-node";
import { isControlLogUnavailable, retryWhileUnavailable } from "../../transport/control-log-unavailable.ts";

const noResponders = () => new natsErrors.RequestError("no responders", { cause: new natsErrors.NoRespondersError("custody.v1.ctrl.x") });
const apiError = (code: number, errCode: number) => new JetStreamApiError({ code, err_code: errCode, description: "x" } as never);

test("timeouts, no responders (also wrapped, as nats.js's JetStream publish wraps it) and 503 answers are an unavailable log; other API errors are not", (t) => {
  t.true(isControlLogUnavailable(new natsErrors.TimeoutError()));
  t.true(isControlLogUnavailable(noResponders()));
  t.true(isControlLogUnavailable(new Error("jetstream is not enabled", { cause: noResponders() })));
  t.true(isControlLogUnavailable(apiError(503, 10008)));
  t.false(isControlLogUnavailable(apiError(400, JetStreamApiCodes.StreamWrongLastSequence)));
  t.false(isControlLogUnavailable(apiError(404, JetStreamApiCodes.StreamNotFound)));
  t.false(isControlLogUnavailable(new Error("anything else")));
  t.false(isControlLogUnavailable(new natsErrors.RequestError("refused")));
});

test("retryWhileUnavailable tries again while the log is unavailable, and throws at once on any other error or when the budget is zero", async (t) => {
  const seen: number[] = [];
  t.is(
    await retryWhileUnavailable(60_000, async (n) => {
      seen.push(n);
      if (n < 3) throw noResponders();
      return "stored";
    }),
    "stored",
  );
  t.deepEqual(seen, [1, 2, 3], "each try is told its number");
  let tries = 0;
  const conflict = apiError(400, JetStreamApiCodes.StreamWrongLastSequence);
  await t.throwsAsync(
    retryWhileUnavailable(60_000, async () => {
      tries++;
      throw conflict;
    }),
    { is: conflict },
  );
  t.is(tries, 1);
  tries = 0;
  await t.throwsAsync(
    retryWhileUnavailable(0, async () => {
      tries++;
      throw new natsErrors.TimeoutError();
    }),
    { instanceOf: natsErrors.TimeoutError },
  );
  t.is(tries, 1, "a single-replica log (budget 0) is tried once");
});
