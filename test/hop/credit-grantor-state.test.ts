/**
 * The grantor as plain data (actors/hop/credit-grantor-state.ts) keeps CreditGrantor's rules: driven
 * by the same arrivals, requests and top-ups, both hold the same windows and publish the same grants.
 */
import test from "ava";
import fc from "fast-check";
import {
  CreditGrantor,
  grantorArrival,
  grantorRegrant,
  grantorRequest,
  grantorTopUp,
  grantorAnnounce,
  initialGrantorLane,
  closeGrantor,
  type GrantorLane,
} from "../../actors/hop/index.ts";
import type { Transport } from "../../transport/transport.ts";
import { creditSpec } from "../../transport/protocol/wire/messages.ts";
import { decodeMessage } from "../../transport/protocol/wire/index.ts";
import type { WireCredit } from "../../transport/protocol/wire/messages.ts";

const SENDERS = ["w1", "w2"];
const MAX = 1000;

function classGrantor(space: number): { g: CreditGrantor; published: WireCredit[] } {
  const published: WireCredit[] = [];
  const transport = { publish: (_s: string, data: Uint8Array) => published.push(decodeMessage(creditSpec, data)) };
  const g = new CreditGrantor({
    transport: transport as unknown as Transport,
    holder: "h1",
    incarnation: 4,
    volume: "v",
    lane: "l0",
    senders: SENDERS,
    space: { grant: (n) => Math.min(n, space) },
    maxOutstanding: MAX,
  });
  return { g, published };
}

const pureLane = () =>
  initialGrantorLane({ holder: "h1", incarnation: 4, volume: "v", lane: "l0", senders: SENDERS, maxOutstanding: MAX });

type Op =
  | { kind: "request"; sender: string; session: number; sentThrough: number | undefined; current: boolean }
  | { kind: "arrival"; sender: string; session: number; bytes: number; sentThrough: number | undefined; current: boolean }
  | { kind: "topUp"; sender: string; force: boolean };

const sender = fc.constantFrom(...SENDERS, "stranger");
const session = fc.integer({ min: 1, max: 3 });
const sentThrough = fc.option(fc.nat(2 * MAX), { nil: undefined });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("request" as const), sender, session, sentThrough, current: fc.boolean() }),
  fc.record({ kind: fc.constant("arrival" as const), sender, session, bytes: fc.nat(300), sentThrough, current: fc.boolean() }),
  fc.record({ kind: fc.constant("topUp" as const), sender, force: fc.boolean() }),
);

/** Headers naming the pure state's current window of `o.sender` (or a window of another incarnation). */
function headersFor(lane: GrantorLane, o: Extract<Op, { session: number }>) {
  const window = { incarnation: o.current ? 4 : 3, window: lane.senders[o.sender]?.window ?? 0 };
  return { session: o.session, sentThrough: o.sentThrough, window };
}

/** Runs `o` on the pure lane; returns the new lane, the grants it published, and whether it threw. */
function pureOp(lane: GrantorLane, o: Op, space: number): { lane: GrantorLane; out: WireCredit[]; threw?: string } {
  if (o.kind === "topUp") {
    const r = grantorTopUp(lane, o.sender, { force: o.force, grantable: space });
    return { lane: r.lane, out: r.grant ? [r.grant] : [] };
  }
  const h = headersFor(lane, o);
  if (o.kind === "request") {
    const r = grantorRequest(lane, o.sender, h, space);
    return { lane: r.lane, out: r.grant ? [r.grant] : [] };
  }
  try {
    const r = grantorArrival(lane, o.sender, o.bytes, h);
    if (!r.republish) return { lane: r.lane, out: [] };
    const again = grantorRegrant(r.lane, o.sender, space);
    return { lane: again.lane, out: [again.grant] };
  } catch (err) {
    return { lane, out: [], threw: (err as { code: string }).code };
  }
}

test("driven alike, the pure grantor and CreditGrantor keep the same windows and publish the same grants", async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 40 }), fc.integer({ min: 0, max: 2 * MAX }), async (ops, space) => {
      const { g, published } = classGrantor(space);
      let lane = pureLane();
      g.announce();
      const expected: WireCredit[] = grantorAnnounce(lane);
      for (const o of ops) {
        const h = o.kind === "topUp" ? undefined : headersFor(lane, o);
        const pure = pureOp(lane, o, space);
        let threw: string | undefined;
        try {
          if (o.kind === "topUp") g.topUp(o.sender, o.force);
          else if (o.kind === "request") g.onRequest(o.sender, h!);
          else g.onArrival(o.sender, o.bytes, h!);
        } catch (err) {
          threw = (err as { code: string }).code;
        }
        await Promise.resolve(); // the class re-publishes a stale window's grant at the end of the turn
        if (threw !== pure.threw) return false;
        lane = pure.lane;
        expected.push(...pure.out);
        for (const s of SENDERS) if (JSON.stringify(g.windowOf(s)) !== JSON.stringify(lane.senders[s]!.rx)) return false;
      }
      return JSON.stringify(published) === JSON.stringify(expected);
    }),
  );
  t.pass();
});

test("the pure grantor never changes its input, and a closed lane promises nothing new", (t) => {
  const lane = Object.freeze(pureLane());
  const req = grantorRequest(lane, "w1", { session: 1, sentThrough: undefined, window: undefined });
  t.like(req.grant, { window: 1, session: 1, grantedThrough: MAX });
  t.is(lane.senders.w1!.window, 0);
  const closed = closeGrantor(req.lane);
  const drained = grantorArrival(closed, "w1", 600, { session: 1, sentThrough: 600, window: { incarnation: 4, window: 1 } });
  t.deepEqual(drained.verdict, { kind: "ok", consumed: 600 });
  t.deepEqual(grantorTopUp(drained.lane, "w1"), { lane: drained.lane, withheld: false });
  t.like(grantorRegrant(drained.lane, "w1").grant, { grantedThrough: MAX, grantSeq: 1 });
});
