/**
 * One valid sample body per registered message kind, keyed `kind@version`. The round-trip test
 * (`wire-roundtrip.test.ts`) fails for any registered kind without a sample here, so whoever adds
 * a kind with `defineMessage` adds its sample to this table too.
 */
const digest = Uint8Array.from({ length: 32 }, (_, i) => i * 7);
const payload = Uint8Array.from({ length: 300 }, (_, i) => (i * 31) & 0xff);

const publicKey = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
const signature = Uint8Array.from({ length: 64 }, (_, i) => i);

export const wireSamples: Record<string, unknown> = {
  // custody/admission.ts
  "admission-body@1": { holderId: "us-east-1a-ram", incarnation: 4, publicKey, failureDomain: "us-east/use1-az1/host-7", at: 1_764_000_000_000 },
  "admission-request@1": { body: payload, signature },
  "unit@1": {
    volume: "vol-a",
    lane: "lane-0",
    term: 3,
    firstSeq: 100,
    lastSeq: 102,
    commitTs: [1_764_000_000_000, 1_764_000_000_001, 1_764_000_000_001.5],
    payload,
    digest,
  },
  "unit-frame@1": { units: [payload, digest, payload], sentThrough: [4096, 8192, 12_288] },
  "credit@2": { holder: "us-east-1a-ram", sender: "writer-1", volume: "vol-a", lane: "lane-0", incarnation: 3, session: 2, window: 1, grantedThrough: 1_048_576, grantSeq: 7 },
  "credit-request@1": { sender: "writer-1", holder: "us-east-1a-ram", volume: "vol-a", lane: "lane-0", wantBytes: 65_536 },
  // transport/protocol/wire/holder-messages.ts
  "release-frontier@1": { holder: "us-east-1a-ram", volume: "vol-a", lane: "lane-0", ranges: [[0, 99], [120, 130]], epoch: 4, controlSeq: 17 },
  "base-ready@1": { holder: "us-west-2a-store", volume: "vol-a", lane: "lane-0", snapshotId: "base-4096", throughSeq: 4096, bytes: 16777216 },
  "transfer-offer@1": { from: "us-east-1a-ram", to: "us-east-1a-ram-2", volume: "vol-a", lane: "lane-0", offerId: 2, units: [payload, digest] },
  "transfer-offer@2": { from: "us-east-1a-ram", to: "us-east-1a-ram-2", volume: "vol-a", lane: "lane-0", offerId: 3, units: [payload, digest], attestations: [signature] },
  "holder-event@1": {
    event: "contract_violation",
    holder: "us-east-1a-ram",
    incarnation: 3,
    volume: "vol-a",
    lane: "lane-0",
    ranges: [[116, 120]],
    reason: "protected RAM evacuation missed its hold-up deadline",
    at: 1_764_000_000_500,
  },
  // transport/protocol/wire/manifest-messages.ts
  "lane-manifest@1": { writer: "writer-1", volume: "vol-a", term: 2, lsn: 4711, cut: [["lane-0", 120], ["lane-1", 98]] },
  // custody/custody-messages.ts (canonical bytes inside; see custody/receipt-batch.ts and custody/control-event.ts)
  "receipt-batch@1": { body: payload, signature: Uint8Array.from({ length: 64 }, (_, i) => i) },
  "control-event@1": { event: payload },
  "control-snapshot@1": { snapshot: payload, signer: "operator", signature: new Uint8Array(64).fill(7) },
  // transport/protocol/wire/writer-messages.ts, transport/protocol/wire/volume-status.ts, actors/replica/replica-messages.ts, transport/protocol/wire/unit-fetch.ts
  "writer-progress@1": { writer: "writer-1", volume: "vol-a", term: 2, lanes: [{ lane: "lane-0", head: 120, runs: [[101, 120, 1_764_000_000_000, 4096]] }], at: 1_764_000_000_100 },
  "volume-status@1": {
    volume: "vol-a",
    controller: "ctl-east",
    asOfMs: 1_764_000_000_000,
    controlSeq: 12,
    acknowledged: [["lane-0", 120]],
    survivingCut: [["lane-0", 118]],
    scenarios: [
      {
        name: "US-East lost",
        kind: "scenario",
        required: true,
        cut: [["lane-0", 118]],
        lostSeqs: 2,
        inFlightSeqs: 2,
        overdueSeqs: 0,
        lossSinceMs: null,
        lostBytes: 8192,
        oldestLostAgeMs: 3000,
        rtoSec: 150,
        deadlineSec: 900,
        meetsDeadline: true,
        destination: "euw1-store",
        evidence: "observed",
        contributors: ["europe", "waypoint"],
        flags: [],
      },
    ],
    evidence: [{ holder: "europe", ageMs: 120, stale: false }],
    releasesCommitted: 3,
  },
  "replica-barrier@1": { replica: "replica-1", volume: "vol-a", targetLsn: 77 },
  "replica-flushed@1": { replica: "replica-1", volume: "vol-a", flushedLsn: 77, reached: true },
  // transport/protocol/wire/replica-catchup-messages.ts
  "replica-catchup-begin@1": { replica: "replica-1", volume: "vol-a", flushedLsn: 70 },
  "replica-catchup-plan@1": { session: "9f3a0c1d2e4b5a67", decision: "delta_rebuild", reason: "records after 70 were recycled; dirty map covers them", replicaFlushedLsn: 70, walStart: 90, walHead: 120, checkpointLsn: 89, deltaBlocks: 12, walRecords: 31, items: 43, fellBackToDelta: false },
  "replica-catchup-next@1": { replica: "replica-1", volume: "vol-a", session: "9f3a0c1d2e4b5a67", cursor: 12 },
  "replica-catchup-chunk@1": { session: "9f3a0c1d2e4b5a67", cursor: 12, count: 3, done: false, sealed: payload },
  "replica-catchup-refused@1": { code: "catchup_not_configured", message: "replica replica-9 is not configured for vol-a" },
  "unit-fetch@1": { holder: "us-east-1a-ram", volume: "vol-a", lane: "lane-0", ranges: [[1, 50]], after: -1, limit: 256 },
  "unit-batch@1": { holder: "us-east-1a-ram", units: [payload], done: true },
  // transport/protocol/wire/failover-messages.ts
  "failover-request@1": { volume: "vol-a", lanes: ["lane-0", "lane-1"], term: 2, recoveredCut: { "lane-0": 96, "lane-1": 40 } },
  "failover-answer@1": { ok: true, plan: { term: 2, recoveredCut: { "lane-0": 96 }, oldHead: { "lane-0": 100 }, firstSeq: { "lane-0": 101 }, failoverSeq: { "lane-0": 17 }, controlSeq: { "lane-0": 18 } } },
  // transport/protocol/wire/repair-messages.ts
  "repair-view-request@1": { repairId: "repair-vol-a-12", lanes: ["lane-0"] },
  "repair-view@1": {
    holders: [{ holderId: "h-1", status: "failed", incarnation: 2 }],
    lanes: [{ lane: "lane-0", released: [{ holder: "h-1", ranges: [[1, 9]] }], responsible: [{ holder: "h-1", ranges: [[1, 100]] }] }],
    holdings: [{ holderId: "h-1", incarnation: 2, lane: "lane-0", retained: [[10, 100]], issuedAt: 1_764_000_000_000 }],
    staleAfterMs: 30_000,
    recovery: { destination: "s-usw", detectSec: 30, authorizeSec: 5, acquireCapacitySec: 60, persistSec: 10, validateSec: 5 },
  },
  "repair-admit@1": { repairId: "repair-vol-a-12", replacement: { holderId: "h-3", incarnation: 1, publicKey, failureDomain: "us-east/use1-az3/host-2" } },
  "repair-activate@1": { repairId: "repair-vol-a-12", transferId: "repair-vol-a-12-lane-0-h-1", lane: "lane-0", fromHolder: "h-1", toHolder: "h-3", ranges: [[10, 100]] },
  "repair-protect@1": { repairId: "repair-vol-a-12", id: "repair-vol-a-12-lane-0", lane: "lane-0", ranges: [[10, 100]] },
  "repair-unprotect@1": { repairId: "repair-vol-a-12", id: "repair-vol-a-12-lane-0" },
  "repair-answer@1": { ok: false, code: "repair_request_refused", message: "no such repair is running" },
  "repair-task@1": { repairId: "repair-vol-a-12", volume: "vol-a", lanes: ["lane-0"], failed: ["h-1"], replacement: { holderId: "h-3", incarnation: 1, publicKey, failureDomain: "us-east/use1-az3/host-2" }, bandwidthBytesPerSec: 125_000_000, receiptTimeoutMs: 10_000 },
  "repair-outcome@1": {
    repairId: "repair-vol-a-12",
    report: {
      missing: [{ lane: "lane-0", ranges: [[10, 100]] }],
      copiedUnits: 3,
      copiedBytes: 4096,
      measuredMs: 120.5,
      controlSeq: 31,
      estimate: { detectSec: 30, authorizeSec: 5, acquireCapacitySec: 60, transferSec: null, persistSec: 10, validateSec: 5, missingBytes: 4096, totalSec: null },
    },
  },
  "retention-challenge@1": { holder: "us-east-1a-ram", volume: "vol-a", lane: "lane-0", nonce: digest, seqs: [[5, 5], [90, 90]] },
  "retention-answer@1": { holder: "us-east-1a-ram", nonce: digest, covered: [[5, 5], [90, 90]], digest },
  // transport/protocol/route-messages.ts
  "route-probe@1": { from: "w1", to: "h-nj", phase: "burst", nonce: 7, index: 2, last: false, received: 0, pad: payload },
  "route-measurements@1": {
    from: "w1",
    fromSite: "s-w",
    routes: [{ to: "h-nj", toSite: "s-nj", rttMs: 101.5, jitterMs: 1.25, throughputBytesPerSec: 498_000, loadBytesPerSec: 12_000, samples: 5, ageMs: 40 }],
    probeBytes: 99_000,
  },
};
