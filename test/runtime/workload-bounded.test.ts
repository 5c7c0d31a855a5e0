/**
 * The workload's `count` and `contract` (actors/runtime/workload-loop.ts): it ends by itself after `count`
 * acknowledged writes, and with a contract a write is acknowledged only by a sync under it — a sync
 * that fails acknowledges nothing; a contract the writer lacks is refused at start. A fake writer,
 * no I/O besides the acknowledgement log.
 */
import test from "ava";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { WriteAck } from "../../actors/index.ts";
import { writerRoleSchema } from "../../actors/runtime/role-config.ts";
import { runWriter } from "../../actors/runtime/run-writer.ts";
import { startWorkload, type WorkloadOptions } from "../../actors/runtime/workload-loop.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";

/** A writer that admits every write at once and records how each sync was asked for. */
function fakeWriter(failSyncs = 0) {
  let lsn = 0;
  const syncs: unknown[][] = [];
  return {
    syncs,
    write: async (): Promise<WriteAck> => {
      lsn++;
      return { lsn, pieces: [{ lane: "l0", seq: lsn }] } as unknown as WriteAck;
    },
    sync: async (...args: unknown[]) => {
      syncs.push(args);
      if (syncs.length <= failSyncs) throw new Error("protection_timeout");
    },
  };
}

const logged = (file: string) => readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { i: number });

for (const mode of [{ depth: 4 }, { inFlight: 3 }] as const) {
  const name = "depth" in mode ? "rounds" : "window";
  test(`${name}: count ends the workload after that many acknowledged writes; each sync is one under the contract`, async (t) => {
    const ackLog = join(tempDir("custody-workload-"), "acks.log");
    const w = fakeWriter();
    const opts: WorkloadOptions = { intervalMs: 0, ...mode, count: 10, contract: { name: "az-loss", timeoutMs: 1234 }, ackLog };
    const run = startWorkload(w, opts, 64, () => w.write());
    await run.done;
    t.is(run.written(), 10);
    t.deepEqual(logged(ackLog).map((l) => l.i), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    t.true(w.syncs.length > 0);
    for (const s of w.syncs) t.deepEqual(s, ["az-loss", 1234]);
  });
}

test("rounds: a sync under the contract that fails acknowledges none of its writes", async (t) => {
  const ackLog = join(tempDir("custody-workload-"), "acks.log");
  const w = fakeWriter(1);
  const run = startWorkload(w, { intervalMs: 0, depth: 5, count: 5, contract: { name: "az-loss" }, ackLog }, 64, () => w.write());
  await run.done;
  t.deepEqual(w.syncs, [["az-loss", 30_000], ["az-loss", 30_000]]);
  // The first round's writes (LSN 1-5) were never proved protected: only the second round's are logged.
  t.deepEqual(readFileSync(ackLog, "utf8").split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { lsn: number }).lsn), [6, 7, 8, 9, 10]);
});

test("a writer role whose workload names a contract the writer lacks is refused at start, before it connects", async (t) => {
  const cfg = writerRoleSchema.parse({
    role: "writer",
    // Nothing listens here: the refusal must come before any connection attempt.
    nats: { servers: "nats://127.0.0.1:1", maxReconnectAttempts: 0 },
    controlRegion: "r",
    stateDir: tempDir("custody-workload-"),
    dataKeyFile: "/nonexistent",
    volume: { blockCount: 64 },
    writer: { writerId: "w1", volume: "v", lanes: [], contracts: [{ name: "az-loss", losses: ["az:a"] }], holderSites: {}, topologyEpoch: 1, policyGeneration: 1 },
    workload: { intervalMs: 0, contract: { name: "region-loss" } },
  });
  const err = await t.throwsAsync(runWriter(cfg));
  t.is((err as { code?: string }).code, "invalid_role_config");
  t.regex(err!.message, /no contract region-loss/);
});
