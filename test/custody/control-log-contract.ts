import type { ExecutionContext } from "ava";
import { ControlConflictError, ControlFenceError } from "../../custody/control-error.ts";
import { encodeControlEvent, GENESIS_HASH, hashControlEvent } from "../../custody/control-event.ts";
import type { ControlLogStore } from "../../custody/control-log.ts";
import { INITIAL_CONTROL_STATE } from "../../custody/control-state.ts";
import { admit, eventOn } from "./control-fixtures.ts";
import { RangeSet } from "../../lanes/range-set.ts";

/**
 * The ControlLogStore contract, run against every implementation (in-memory and JetStream):
 * conditional append, exactly-one-wins on a race, ordered reads from a sequence, lastSeq.
 */
export async function checkControlLogContract(t: ExecutionContext, store: ControlLogStore): Promise<void> {
  t.is(await store.lastSeq(), 0);
  t.deepEqual(await store.readAll(), []);
  const e1 = eventOn(INITIAL_CONTROL_STATE, admit("h1"));
  const seq1 = await store.append(e1, 0);
  t.true(seq1 > 0);
  const h1 = hashControlEvent(e1);
  const s1 = { ...INITIAL_CONTROL_STATE, lastSeq: seq1, headHash: h1 };
  const a = eventOn(s1, admit("h2"), "ctl-a");
  const b = eventOn(s1, admit("relay"), "ctl-b");
  const results = await Promise.allSettled([store.append(a, seq1), store.append(b, seq1)]);
  const won = results.filter((r) => r.status === "fulfilled");
  const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
  t.is(won.length, 1, "exactly one of two racing appends commits");
  t.true(lost[0]?.reason instanceof ControlConflictError, "the other gets a typed conflict");
  await t.throwsAsync(store.append(eventOn(INITIAL_CONTROL_STATE, admit("h2")), 0), { instanceOf: ControlConflictError }, "a stale expected sequence conflicts");
  const all = await store.readAll();
  t.is(all.length, 2);
  t.is(all[0]!.event.prevHash, GENESIS_HASH);
  t.is(all[0]!.hash, h1);
  t.deepEqual(encodeControlEvent(all[0]!.event), encodeControlEvent(e1), "stored bytes decode to the committed event");
  t.is(await store.lastSeq(), all[1]!.seq);
  t.deepEqual((await store.readFrom(all[1]!.seq)).map((e) => e.seq), [all[1]!.seq]);
  t.deepEqual(await store.readFrom(all[1]!.seq + 1), []);
  // An event no reader could decode (a token with a "."; schemas elsewhere allow ids like "h1.snap-1")
  // is refused before it is stored: stored, it would stop every replay of this log for good.
  const headState = { ...INITIAL_CONTROL_STATE, lastSeq: all[1]!.seq, headHash: all[1]!.hash };
  const poison = eventOn(headState, { type: "release_to_base", obligationId: "ob1", holderId: "h1", ranges: RangeSet.of(1, 5), baseHolder: "h2", snapshotId: "h2.snap-1", baseThroughSeq: 5 });
  t.is((await t.throwsAsync(store.append(poison, all[1]!.seq), { instanceOf: ControlFenceError }))?.code, "malformed");
  t.is(await store.lastSeq(), all[1]!.seq, "nothing was stored");
  t.is((await store.readAll()).length, 2, "and the log still reads");
}
