import anyTest, { type TestFn } from "ava";
import { baseSubject, creditSubject, fetchSubject, receiptSubject, releaseSubject, transferSubject, unitSubject } from "../../transport/protocol/subjects.ts";
import { SENDER_HEADER } from "../../transport/unit-frames.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, LANE, launchHolder, transport, unit, VOLUME, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

/** Nested `array16(65535)` headers filling `bytes`: before the bounded scan, 30 KB of this exhausted the heap. */
function bomb(bytes: number): Uint8Array {
  const b = new Uint8Array(bytes);
  for (let i = 0; i + 3 <= bytes; i += 3) b.set([0xdc, 0xff, 0xff], i);
  return b;
}

// Issue #19: a decoder bomb on any subject a holder reads killed it. Now every one is a counted
// rejection, custody is unchanged, and the holder goes on admitting and receipting units.
test.serial("nearly 1 MiB decoder bombs on every subject a holder reads are refused and counted; custody is unchanged and the holder keeps serving", async (t) => {
  const url = t.context.nats.url;
  const keys = new KeyRing();
  const h = await launchHolder(url, keys, holderConfig("h-bomb", { downstream: ["h-down"] }));
  const wt = await transport(url, "attacker-and-writer");
  const w = new Writer(wt, "h-bomb");
  const lane = () => h.holder.lane(VOLUME, LANE)!;
  try {
    for (let s = 1; s <= 5; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "1-5", "units 1-5 admitted");
    const before = h.holder.counters.snapshot();
    const payload = bomb(1024 * 1024 - 4096);
    const subjects = [
      unitSubject("h-bomb", VOLUME, LANE),
      creditSubject("h-down", VOLUME, LANE),
      receiptSubject(VOLUME, LANE),
      releaseSubject("h-bomb"),
      releaseSubject("h-down"),
      transferSubject("h-bomb"),
      fetchSubject("h-bomb", VOLUME),
      baseSubject("h-bomb"),
    ];
    for (const s of subjects) wt.publish(s, payload, { headers: { [SENDER_HEADER]: "w1" } });
    await wt.flush();
    const rejected = () => {
      const now = h.holder.counters.snapshot();
      return Object.keys(now).filter((k) => k !== "duplicate_unit" && (now[k] ?? 0) > (before[k] ?? 0));
    };
    await eventually(() => rejected().length > 0 && h.log.filter((o) => o.type === "rejected").length >= subjects.length - 2, "the bombs were refused", 10_000, () => JSON.stringify(rejected()));
    t.is(lane().retained.toString(), "1-5", "custody unchanged");
    t.true(lane().released.isEmpty, "nothing released");
    for (let s = 6; s <= 8; s++) w.send(unit(s));
    await eventually(() => lane().retained.toString() === "1-8", "the holder still admits units");
    t.log(`rejections: ${JSON.stringify(Object.fromEntries(rejected().map((k) => [k, (h.holder.counters.snapshot()[k] ?? 0) - (before[k] ?? 0)])))}`);
  } finally {
    w.sender.close();
    await wt.close();
    await h.close();
  }
});
