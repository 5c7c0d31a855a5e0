import test from "ava";
import { parseHolderConfig } from "../../actors/holder/holder-config.ts";
import { Residency as ArenaResidency } from "../../arena/index.ts";
import { Segment } from "../../arena/segment.ts";
import { RESIDENCIES, Residency } from "../../core/residency.ts";
import { EvidenceKind, isKnownEvidenceKind } from "../../custody/evidence.ts";
import { Residency as PolicyResidency } from "../../policies/index.ts";

test("receipt evidence kinds, holder residencies, policy residencies and arena residencies are one list", (t) => {
  t.deepEqual(Object.values(Residency), [...RESIDENCIES]);
  t.is(EvidenceKind, Residency);
  t.is(PolicyResidency, Residency);
  t.is(ArenaResidency, Residency);
  for (const r of RESIDENCIES) t.true(isKnownEvidenceKind(r), r);
  t.false(isKnownEvidenceKind("nvram"));
});

test("a holder may claim every residency, given the spill stream and evidence the stronger ones need", (t) => {
  const cfg = parseHolderConfig({
    holderId: "h1",
    incarnation: 1,
    site: { region: "us-east", az: "a", host: "x" },
    residency: [...RESIDENCIES],
    lanes: [{ volume: "v", lane: "l", upstream: ["w"] }],
    arena: { limitBytes: 1 << 22 },
    receipts: {},
    flush: { intervalMs: 10, deadlineMs: 40 },
    protectedRam: {
      evidence: { protectedBytes: 1 << 30, batteryHealth: 1, holdUpMs: 10_000, autonomousPreservation: true, drainBytesPerSec: 1e9, detectionMs: 10, persistenceCompletionMs: 50, marginMs: 50, measuredAt: 0, capabilityGeneration: 1 },
      maxEvidenceAgeMs: 60_000,
      minBatteryHealth: 0.5,
    },
  });
  t.deepEqual(cfg.residency, [...RESIDENCIES]);
});

test("a fresh arena segment is RAM-resident", (t) => {
  const seg = new Segment(1, "v", "l", Buffer.alloc(4096), 0);
  t.is(seg.residency, Residency.ram);
});
