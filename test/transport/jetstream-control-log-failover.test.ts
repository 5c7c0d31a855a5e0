/**
 * An append to a replicated control log while its stream has no leader: the publish is sent again
 * (same message id, same expected sequence) until a leader answers; a try that timed out but was
 * stored is recognised by its bytes (the commit succeeded), while someone else's entry at that
 * position is still a conflict. The JetStream client and manager are stand-ins: this is the
 * store's logic alone (the real leader loss is test/deploy/replicated-control-log.test.ts).
 */
import test from "ava";
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { errors as natsErrors, type NatsConnection } from "@nats-io/transport-node";
import { ControlConflictError } from "../../custody/control-error.ts";
import { INITIAL_CONTROL_STATE } from "../../custody/control-state.ts";
import { JetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { admit, eventOn } from "../custody/control-fixtures.ts";

type Publish = (subject: string, data: Uint8Array, opts: { msgID?: string; expect?: { lastSequence?: number } }) => Promise<{ seq: number; duplicate: boolean; stream: string }>;

/** A store over stand-ins: `publish` answers each try; `stored` is what the stream holds by sequence. */
function storeWith(publish: Publish, stored: Map<number, Uint8Array>, failoverMs: number) {
  const sent: { data: Uint8Array; msgID?: string | undefined; lastSequence?: number | undefined }[] = [];
  const js = {
    publish: async (subject: string, data: Uint8Array, opts: Parameters<Publish>[2]) => {
      sent.push({ data, msgID: opts.msgID, lastSequence: opts.expect?.lastSequence });
      return await publish(subject, data, opts);
    },
  } as unknown as JetStreamClient;
  const jsm = { streams: { getMessage: async (_: string, q: { seq: number }) => (stored.has(q.seq) ? { seq: q.seq, data: stored.get(q.seq)! } : null) } } as unknown as JetStreamManager;
  return { store: new JetStreamControlLog({} as NatsConnection, jsm, js, "ctl", "CUSTODY_CTRL_ctl", "custody.v1.ctrl.ctl", 1_000, failoverMs), sent };
}

const event = eventOn(INITIAL_CONTROL_STATE, admit("h1"));
const noResponders = () => new Error("jetstream is not enabled", { cause: new natsErrors.RequestError("no responders", { cause: new natsErrors.NoRespondersError("custody.v1.ctrl.ctl") }) });

test("no responders, then a timeout, then the new leader's ack: one commit, every try with the same id and expected sequence", async (t) => {
  let tries = 0;
  const { store, sent } = storeWith(async () => {
    tries++;
    if (tries === 1) throw noResponders();
    if (tries === 2) throw new natsErrors.TimeoutError();
    return { seq: 1, duplicate: false, stream: "CUSTODY_CTRL_ctl" };
  }, new Map(), 60_000);
  t.is(await store.append(event, 0), 1);
  t.is(sent.length, 3);
  t.deepEqual(new Set(sent.map((s) => `${s.msgID}/${s.lastSequence}`)).size, 1);
});

test("a try that timed out but was stored: the next try's duplicate (or moved-past) answer finds these bytes there, and the commit succeeded", async (t) => {
  const stored = new Map<number, Uint8Array>();
  let tries = 0;
  const { store } = storeWith(async (_s, data) => {
    tries++;
    if (tries === 1) {
      stored.set(1, data); // stored, but the ack never came back
      throw new natsErrors.TimeoutError();
    }
    return { seq: 1, duplicate: true, stream: "CUSTODY_CTRL_ctl" };
  }, stored, 60_000);
  t.is(await store.append(event, 0), 1);
  // The server may check the expected sequence before the duplicate window: "wrong last sequence".
  const stored2 = new Map<number, Uint8Array>();
  let tries2 = 0;
  const moved = storeWith(async (_s, data) => {
    if (++tries2 === 1) {
      stored2.set(1, data);
      throw new natsErrors.TimeoutError();
    }
    throw new JetStreamApiError({ code: 400, err_code: JetStreamApiCodes.StreamWrongLastSequence, description: "wrong last sequence: 1" });
  }, stored2, 60_000);
  t.is(await moved.store.append(event, 0), 1);
});

test("someone else's entry at that position after a retry is still a conflict; a single-replica store (no failover budget) tries once", async (t) => {
  const theirs = new Map([[1, new Uint8Array([1, 2, 3])]]);
  let tries = 0;
  const { store } = storeWith(async () => {
    if (++tries === 1) throw new natsErrors.TimeoutError();
    return { seq: 1, duplicate: true, stream: "CUSTODY_CTRL_ctl" };
  }, theirs, 60_000);
  await t.throwsAsync(store.append(event, 0), { instanceOf: ControlConflictError });
  const single = storeWith(async () => {
    throw new natsErrors.TimeoutError();
  }, new Map(), 0);
  await t.throwsAsync(single.store.append(event, 0), { instanceOf: natsErrors.TimeoutError });
  t.is(single.sent.length, 1);
});
