/**
 * A protected-RAM holder's ingress credits respect the protected-RAM admission bound on a real NATS
 * server: it never promises more than the bound admits, so what it holds stays protected (its
 * receipts never fall back to plain RAM) and the sender waits instead; releases make room again.
 */
import anyTest, { type TestFn } from "ava";
import type { ProtectedRamEvidence } from "../../actors/holder/holder-config.ts";
import { protectedAdmissionLimit } from "../../policies/protected-ram.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { eventually, holderConfig, KeyRing, launchHolder, publishRelease, settle, transport, unit, watchReceipts, Writer } from "./holder-fixture.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

/** A slow drain shared by four hosts: 800 KB/s / 4 = 200 KB/s for 0.9 s of slack — about 180 KB. */
const evidence = (): ProtectedRamEvidence => ({
  protectedBytes: 64 << 20,
  batteryHealth: 0.95,
  holdUpMs: 1_000,
  autonomousPreservation: true,
  drainBytesPerSec: 10 << 20,
  detectionMs: 10,
  persistenceCompletionMs: 50,
  marginMs: 40,
  measuredAt: Date.now(),
  capabilityGeneration: 1,
  sharedDrain: { target: "nvme-shared", capacityBytesPerSec: 800_000, sharers: 4 },
});

test.serial("a protected-RAM holder never grants credit past the shared-drain admission bound: its receipts stay protected and the sender waits until releases make room", async (t) => {
  const url = t.context.nats.url;
  const e = evidence();
  const limit = protectedAdmissionLimit(e);
  t.true(limit > 150_000 && limit < 200_000, `limit ${limit}`);
  const h = await launchHolder(url, new KeyRing(), holderConfig("h-pram", { residency: ["ram", "protected_ram"], protectedRam: { evidence: e, maxEvidenceAgeMs: 60_000, minBatteryHealth: 0.8 } }));
  const wt = await transport(url, "w1");
  const receipts = watchReceipts(wt);
  const w = new Writer(wt, "h-pram");
  t.teardown(async () => {
    receipts.stop();
    w.sender.close();
    await wt.close();
    await h.close();
  });
  const lane = h.holder.lane("vol1", "l0")!;
  const queuedAndPromised = () => lane.ramBytes() + lane.arenaCreditBytes();
  let worst = 0;
  const watch = setInterval(() => (worst = Math.max(worst, queuedAndPromised())), 2);
  t.teardown(() => clearInterval(watch));

  // 100 units of 4 KiB: more than twice what the bound admits.
  for (let q = 1; q <= 100; q++) w.send(unit(q, 1, 4096));
  await eventually(() => receipts.byHolder("h-pram").count >= 20, "first receipts");
  await settle(300);
  const first = receipts.byHolder("h-pram");
  t.false(first.covers(1, 100), `the sender waits for credit; receipted ${first}`);
  t.true(worst <= limit, `RAM queued + promised reached ${worst} > bound ${limit}`);
  t.is(h.holder.protectionState(), "ok");
  t.deepEqual([...new Set(receipts.residencies("h-pram"))], ["protected_ram"], "no receipt fell back to plain RAM");

  // The releases a controller would commit make room: the rest arrives, still within the bound.
  for (let round = 0; round < 20 && !receipts.byHolder("h-pram").covers(1, 100); round++) {
    const have = receipts.byHolder("h-pram");
    publishRelease(wt, "h-pram", have.toJSON() as [number, number][], 0, round + 1);
    await settle(150);
  }
  t.true(receipts.byHolder("h-pram").covers(1, 100), `receipted ${receipts.byHolder("h-pram")}`);
  t.true(worst <= limit, `RAM queued + promised reached ${worst} > bound ${limit}`);
  t.deepEqual([...new Set(receipts.residencies("h-pram"))], ["protected_ram"]);
});
