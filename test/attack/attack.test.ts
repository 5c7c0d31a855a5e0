/**
 * `npm run attack`'s library function on a real secured network (`custody init`, nats-servers,
 * every role a `custody run` process): every attack is refused, no attack changes custody, the
 * control log's admitted holders and obligations, or any process, and every actor keeps serving.
 */
import test from "ava";
import { runAttacks } from "../../tools/attack/run-attacks.ts";

test("every attack on a secured deployment is refused, changes no state, and leaves every actor serving", async (t) => {
  t.timeout(15 * 60_000);
  const report = await runAttacks({ log: (l) => t.log(l) });
  const failed = report.rows.filter((r) => !r.refused || r.changed.length > 0 || !r.serving);
  t.deepEqual(failed, [], "attacks that got through");
  t.true(report.attacks_tried >= 10, `${report.attacks_tried} attacks tried`);
  t.is(report.attacks_refused, report.attacks_tried);
  t.is(report.state_changed, 0);
  t.true(report.max_decode_ms > 0, "the decoders were timed on 1 MiB inputs");
});
