/**
 * The `Transport` conformance suite: behaviour every implementation (NATS, simulated) must show.
 * Register it from a test file:
 *
 *   transportConformance(test, async (t) => ({ a, b, cleanup }), "nats");
 *
 * `makePair` returns two endpoints on the same network; each test gets a fresh pair and calls
 * `cleanup` afterwards. Tests use distinct subject prefixes, so pairs may share one server.
 *
 * Contract assumed by the suite: after `await b.flush()`, subscriptions `b` made earlier are
 * in effect (the server, or the simulated network, knows about them).
 */
import type { ExecutionContext, TestFn } from "ava";
import { headerValue, TransportError, type InboundMessage, type Transport } from "../../transport/index.ts";

/** Two endpoints on one network, and how to dispose of them. */
export interface TransportPair {
  a: Transport;
  b: Transport;
  cleanup(): Promise<void>;
}

/** Give up waiting after this long: a hang becomes a failure with a message, not a test timeout. */
const WAIT_MS = 5_000;
let prefixCounter = 0;

/** Records messages and lets a test await the n-th one. */
export class Collector {
  readonly messages: InboundMessage[] = [];
  #waiters: Array<{ n: number; resolve: () => void }> = [];

  readonly handler = (msg: InboundMessage): void => {
    this.messages.push(msg);
    this.#waiters = this.#waiters.filter((w) => {
      if (this.messages.length < w.n) return true;
      w.resolve();
      return false;
    });
  };

  /** Resolves once `n` messages arrived; rejects after `WAIT_MS` with how many did. */
  waitFor(n: number): Promise<void> {
    if (this.messages.length >= n) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`expected ${n} messages, got ${this.messages.length}`)), WAIT_MS);
      this.#waiters.push({
        n,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

const bytes = (...xs: number[]) => new Uint8Array(xs);
const text = (s: string) => new TextEncoder().encode(s);
const untext = (b: Uint8Array) => new TextDecoder().decode(b);

/** Registers the conformance tests on `test`; titles are prefixed with `label`. */
export function transportConformance<C>(
  test: TestFn<C>,
  makePair: (t: ExecutionContext<C>) => Promise<TransportPair>,
  label = "transport",
): void {
  /** Runs `body` with a fresh pair and a unique subject prefix; always cleans up. */
  const withPair = (title: string, body: (t: ExecutionContext<C>, p: TransportPair, pfx: string) => Promise<void>) =>
    test(`${label}: ${title}`, async (t) => {
      const pair = await makePair(t);
      const pfx = `conf${process.pid}x${++prefixCounter}`;
      try {
        await body(t, pair, pfx);
      } finally {
        await pair.cleanup();
      }
    });

  withPair("a published message reaches a subscriber with subject and bytes intact", async (t, { a, b }, pfx) => {
    const got = new Collector();
    b.subscribe(`${pfx}.hello`, got.handler);
    await b.flush();
    a.publish(`${pfx}.hello`, text("hi"));
    await got.waitFor(1);
    t.is(got.messages[0]?.subject, `${pfx}.hello`);
    t.is(untext(got.messages[0]!.data), "hi");
  });

  withPair("messages from one publisher on one subject arrive in publish order", async (t, { a, b }, pfx) => {
    const got = new Collector();
    const n = 500;
    b.subscribe(`${pfx}.seq`, got.handler);
    await b.flush();
    for (let i = 0; i < n; i++) a.publish(`${pfx}.seq`, text(String(i)));
    await got.waitFor(n);
    t.deepEqual(
      got.messages.map((m) => Number(untext(m.data))),
      Array.from({ length: n }, (_, i) => i),
    );
  });

  withPair("'*' matches exactly one token and '>' matches one or more", async (t, { a, b }, pfx) => {
    const star = new Collector();
    const tail = new Collector();
    const done = new Collector();
    b.subscribe(`${pfx}.w.*`, star.handler);
    b.subscribe(`${pfx}.w.>`, tail.handler);
    b.subscribe(`${pfx}.done`, done.handler);
    await b.flush();
    a.publish(`${pfx}.w`, text("0")); // matches neither: '>' needs at least one token
    a.publish(`${pfx}.w.one`, text("1"));
    a.publish(`${pfx}.w.one.two`, text("2"));
    a.publish(`${pfx}.x.one`, text("3"));
    a.publish(`${pfx}.done`, text("end"));
    await done.waitFor(1);
    await tail.waitFor(2);
    t.deepEqual(star.messages.map((m) => m.subject), [`${pfx}.w.one`]);
    t.deepEqual(tail.messages.map((m) => m.subject), [`${pfx}.w.one`, `${pfx}.w.one.two`]);
  });

  withPair("headers round-trip and are found case-insensitively", async (t, { a, b }, pfx) => {
    const got = new Collector();
    b.subscribe(`${pfx}.h`, got.handler);
    await b.flush();
    a.publish(`${pfx}.h`, bytes(1), { headers: { "X-Custody-Volume": "vol-7", trace_note: "a b=c" } });
    await got.waitFor(1);
    const h = got.messages[0]!.headers;
    t.is(headerValue(h, "x-custody-volume"), "vol-7");
    t.is(headerValue(h, "X-CUSTODY-VOLUME"), "vol-7");
    t.is(headerValue(h, "Trace_Note"), "a b=c");
    t.is(headerValue(h, "absent"), undefined);
  });

  withPair("request gets the responder's reply, with reply headers", async (t, { a, b }, pfx) => {
    b.subscribe(`${pfx}.echo`, (m) => b.respond(m, m.data.slice().reverse(), { headers: { "X-Served-By": "b" } }));
    await b.flush();
    const reply = await a.request(`${pfx}.echo`, bytes(1, 2, 3), { timeoutMs: WAIT_MS });
    t.deepEqual([...reply.data], [3, 2, 1]);
    t.is(headerValue(reply.headers, "x-served-by"), "b");
  });

  withPair("a request nobody answers rejects with TransportError code 'timeout'", async (t, { a, b }, pfx) => {
    b.subscribe(`${pfx}.silent`, () => {}); // a responder exists but never replies
    await b.flush();
    const err = await t.throwsAsync(a.request(`${pfx}.silent`, bytes(), { timeoutMs: 150 }), { instanceOf: TransportError });
    t.is(err?.code, "timeout");
  });

  withPair("a request to a subject without subscribers rejects with code 'no_responders'", async (t, { a }, pfx) => {
    const err = await t.throwsAsync(a.request(`${pfx}.nobody`, bytes(), { timeoutMs: WAIT_MS }), { instanceOf: TransportError });
    t.is(err?.code, "no_responders");
  });

  withPair("a queue group delivers each message to exactly one member; plain subscribers get all", async (t, { a, b }, pfx) => {
    const group = new Collector();
    const members = new Set<string>();
    const all = new Collector();
    const sentinel = new Collector();
    const n = 200;
    b.subscribe(`${pfx}.q`, (m) => (members.add("b"), group.handler(m)), { queue: "workers" });
    a.subscribe(`${pfx}.q`, (m) => (members.add("a"), group.handler(m)), { queue: "workers" });
    b.subscribe(`${pfx}.q`, all.handler);
    b.subscribe(`${pfx}.q-sentinel`, sentinel.handler);
    await b.flush();
    await a.flush();
    for (let i = 0; i < n; i++) a.publish(`${pfx}.q`, text(String(i)));
    await all.waitFor(n);
    await group.waitFor(n);
    a.publish(`${pfx}.q-sentinel`, text("end")); // a duplicate delivery would show up before this
    await sentinel.waitFor(1);
    const seen = group.messages.map((m) => Number(untext(m.data))).sort((x, y) => x - y);
    t.deepEqual(seen, Array.from({ length: n }, (_, i) => i));
    t.is(all.messages.length, n);
    t.true(members.size >= 1);
  });

  withPair("after unsubscribe a subscription receives nothing more", async (t, { a, b }, pfx) => {
    const got = new Collector();
    const sentinel = new Collector();
    const sub = b.subscribe(`${pfx}.u`, got.handler);
    b.subscribe(`${pfx}.u-sentinel`, sentinel.handler);
    await b.flush();
    a.publish(`${pfx}.u`, text("before"));
    await got.waitFor(1);
    sub.unsubscribe();
    await b.flush();
    a.publish(`${pfx}.u`, text("after"));
    a.publish(`${pfx}.u-sentinel`, text("end"));
    await sentinel.waitFor(1);
    t.deepEqual(got.messages.map((m) => untext(m.data)), ["before"]);
    t.notThrows(() => sub.unsubscribe(), "unsubscribe twice is harmless");
  });

  withPair("drain delivers every message already received, then nothing more", async (t, { a, b }, pfx) => {
    const got = new Collector();
    const sentinel = new Collector();
    const n = 300;
    const sub = b.subscribe(`${pfx}.d`, got.handler);
    b.subscribe(`${pfx}.d-sentinel`, sentinel.handler);
    await b.flush();
    for (let i = 0; i < n; i++) a.publish(`${pfx}.d`, text(String(i)));
    await a.flush(); // the network has routed all n to b before b's drain starts
    await sub.drain();
    t.is(got.messages.length, n);
    a.publish(`${pfx}.d`, text("late"));
    a.publish(`${pfx}.d-sentinel`, text("end"));
    await sentinel.waitFor(1);
    t.is(got.messages.length, n);
  });

  withPair("close is idempotent and later use fails with code 'closed'", async (t, { a }, pfx) => {
    await Promise.all([a.close(), a.close()]);
    await t.notThrowsAsync(a.close());
    const pubErr = t.throws(() => a.publish(`${pfx}.z`, bytes(1)), { instanceOf: TransportError });
    t.is(pubErr?.code, "closed");
    const reqErr = await t.throwsAsync(a.request(`${pfx}.z`, bytes(1), { timeoutMs: 100 }), { instanceOf: TransportError });
    t.is(reqErr?.code, "closed");
  });

  withPair("binary payloads arrive byte for byte (all byte values, empty, 256 KiB)", async (t, { a, b }, pfx) => {
    const got = new Collector();
    b.subscribe(`${pfx}.bin`, got.handler);
    await b.flush();
    const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const big = new Uint8Array(256 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
    const sent = [allBytes, new Uint8Array(0), big];
    for (const p of sent) a.publish(`${pfx}.bin`, p);
    await got.waitFor(sent.length);
    got.messages.forEach((m, i) => {
      t.true(m.data instanceof Uint8Array);
      t.true(Buffer.from(m.data).equals(Buffer.from(sent[i]!)), `payload ${i} differs`);
    });
  });

  withPair("the receiver owns received bytes: mutating them does not affect other receivers", async (t, { a, b }, pfx) => {
    const one = new Collector();
    const two = new Collector();
    b.subscribe(`${pfx}.own`, (m) => {
      m.data.fill(0);
      one.handler(m);
    });
    b.subscribe(`${pfx}.own`, two.handler);
    await b.flush();
    a.publish(`${pfx}.own`, bytes(7, 7, 7));
    await one.waitFor(1);
    await two.waitFor(1);
    t.deepEqual([...two.messages[0]!.data], [7, 7, 7]);
  });
}
