import anyTest, { type TestFn } from "ava";
import { randomBytes } from "node:crypto";
import { retentionAnswerSpec, retentionChallengeSpec } from "../../transport/protocol/wire/audit-messages.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { AuditOutcome, auditVerdict } from "../../policies/index.ts";
import { auditSubject, decodeMessage, encodeMessage } from "../../transport/protocol/index.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { CountingFileLayer } from "../kit/counting-file-layer.ts";
import { eventually, holderConfig, KeyRing, launchHolder, settle, tempDir, transport, unit, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const DISK = { residency: ["ram", "disk"] as ("ram" | "disk")[], flush: { intervalMs: 20, deadlineMs: 2_000 } };

/** Starts a disk holder, sends it units 1-30 and waits until every one is on disk and none in RAM. */
async function spilledHolder(url: string, id: string, over: Parameters<typeof holderConfig>[1] = {}) {
  const keys = new KeyRing();
  const files = new CountingFileLayer(nodeFileLayer);
  const h = await launchHolder(url, keys, holderConfig(id, { ...DISK, ...over }), { files, spillPath: `${tempDir()}/spill.log` });
  const wt = await transport(url, `auditor-${id}`);
  const w = new Writer(wt, id);
  const sent: TransportUnit[] = [];
  for (let s = 1; s <= 30; s++) {
    const u = unit(s, 1, 4096);
    sent.push(u);
    w.send(u);
  }
  const lane = () => h.holder.lane("vol1", "l0")!;
  await eventually(() => lane().diskResident.covers(1, 30), "1-30 spilled", 5_000);
  await eventually(() => lane().arenaReport().ramBytes === 0, "nothing left in RAM");
  return {
    h,
    wt,
    files,
    sent,
    async close() {
      w.sender.close();
      await wt.close();
      await settle(50);
      await h.close();
    },
  };
}

async function challenge(r: Awaited<ReturnType<typeof spilledHolder>>, holder: string, seqs: RangeSet, nonce = new Uint8Array(randomBytes(32))) {
  const reply = await r.wt.request(auditSubject(holder), encodeMessage(retentionChallengeSpec, { holder, volume: "vol1", lane: "l0", nonce, seqs: seqs.toJSON() }), { timeoutMs: 3_000 });
  const a = decodeMessage(retentionAnswerSpec, reply.data);
  return { nonce, answer: { digest: a.digest, covered: RangeSet.fromJSON(a.covered) } };
}

test.serial("a holder whose units are only on disk answers a retention challenge from its spill stream, and the answer checks against the bytes it was sent", async (t) => {
  const r = await spilledHolder(t.context.nats.url, "h-audit");
  try {
    const seqs = RangeSet.of(3).add(17).add(29);
    const before = r.files.counts.readBytes;
    const { nonce, answer } = await challenge(r, "h-audit", seqs);
    t.true(r.files.counts.readBytes - before >= 3 * 4096, "the answer read the spilled units");
    t.deepEqual(answer.covered.toJSON(), seqs.toJSON());
    const v = auditVerdict({ nonce, challenged: seqs, answer, referenceUnits: r.sent, stillClaimed: RangeSet.of(1, 30) });
    t.is(v.outcome, AuditOutcome.Passed);
    t.is(r.h.holder.counters.get("audit_answered"), 1);
    t.is(r.h.holder.counters.get("audit_bytes_read"), 3 * 4096);
  } finally {
    await r.close();
  }
});

test.serial("a holder with the test-only dropRetained fault covers the challenged sequences but its digest fails against the bytes it was sent", async (t) => {
  const r = await spilledHolder(t.context.nats.url, "h-cheat", { faults: { dropRetained: true } });
  try {
    const seqs = RangeSet.of(5).add(6);
    const { nonce, answer } = await challenge(r, "h-cheat", seqs);
    t.deepEqual(answer.covered.toJSON(), [[5, 6]]);
    t.deepEqual(auditVerdict({ nonce, challenged: seqs, answer, referenceUnits: r.sent, stillClaimed: RangeSet.of(1, 30) }), { outcome: AuditOutcome.Failed, reason: "digest mismatch" });
  } finally {
    await r.close();
  }
});

test.serial("a challenge naming another holder, a lane not served here (another volume under the same holder id) or a malformed one gets no answer and is counted; nothing changes", async (t) => {
  const r = await spilledHolder(t.context.nats.url, "h-strict");
  try {
    const nonce = new Uint8Array(32);
    const wrong = encodeMessage(retentionChallengeSpec, { holder: "h-other", volume: "vol1", lane: "l0", nonce, seqs: [[1, 1]] });
    await t.throwsAsync(r.wt.request(auditSubject("h-strict"), wrong, { timeoutMs: 300 }));
    await t.throwsAsync(r.wt.request(auditSubject("h-strict"), new Uint8Array([1, 2, 3]), { timeoutMs: 300 }));
    const otherVolume = encodeMessage(retentionChallengeSpec, { holder: "h-strict", volume: "vol2", lane: "l0", nonce, seqs: [[1, 1]] });
    await t.throwsAsync(r.wt.request(auditSubject("h-strict"), otherVolume, { timeoutMs: 300 }));
    t.is(r.h.holder.counters.get("audit_unknown_lane"), 1);
    t.is(r.h.holder.counters.get("audit_wrong_holder"), 1);
    t.is(r.h.holder.counters.get("audit_malformed"), 1);
    t.is(r.h.holder.counters.get("audit_answered"), 0);
    t.is(r.h.holder.lane("vol1", "l0")!.retained.toString(), "1-30");
  } finally {
    await r.close();
  }
});
