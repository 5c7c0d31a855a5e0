/**
 * Role processes of a test deployment (deployment.ts), started as an operator starts them:
 * `custody run holder|writer --config FILE`. Both follow the deployment's control log for their
 * peers' keys; a holder claims its incarnation from its fresh state directory.
 */
import type { KeyObject } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { HolderConfigInput } from "../../actors/holder/holder-config.ts";
import type { ProtectionContract } from "../../actors/writer/writer-config.ts";
import { readAckLog } from "../../actors/runtime/workload.ts";
import { DeployedProcess } from "../kit/deployed-process.ts";
import { tempDir } from "./e2e-fixture.ts";

/** A bound that only ends a hung start; it measures nothing. */
const READY_MS = 60_000;

/** Where a role process connects and which control log it follows. */
interface Bus {
  readonly url: string;
  readonly controlRegion: string;
}

/**
 * Starts a holder as `custody run holder` with `holder` as its holder settings (no incarnation:
 * the state directory gives it, 1 when the control log has admitted none yet) and `privateKey` as
 * its signing key; resolves once it is ready. The caller kills it.
 */
export async function startHolderProcess(bus: Bus, holder: HolderConfigInput, privateKey: KeyObject): Promise<DeployedProcess> {
  const id = String(holder.holderId);
  const dir = tempDir(`custody-${id}-`);
  const keyFile = join(dir, `${id}.key`);
  writeFileSync(keyFile, privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const file = join(dir, `${id}.json`);
  writeFileSync(file, JSON.stringify({ role: "holder", nats: { servers: bus.url }, controlRegion: bus.controlRegion, stateDir: join(dir, "state"), keyFile, holder: { ...holder, incarnation: undefined } }));
  const p = DeployedProcess.role(id, "holder", file);
  await p.ready(READY_MS).catch(async (err: unknown) => {
    await p.signal("SIGKILL", 10_000);
    throw err;
  });
  return p;
}

/** A writer process and the file it logs its acknowledged writes to. */
export interface WriterProcess {
  readonly process: DeployedProcess;
  readonly ackLog: string;
}

/**
 * Starts a writer as `custody run writer` (term 1 from its fresh state directory) whose workload
 * makes `count` writes (`workloadWrite(i, 1, blockCount)`), each acknowledged and logged once a sync
 * under `contract` proved it protected; resolves once it is ready. The caller kills it.
 */
export async function startWriterProcess(
  bus: Bus,
  w: { writerId: string; volume: string; lane: string; blockCount: number; holders: readonly string[]; contract: ProtectionContract; holderSites: Record<string, unknown>; dataKey: Uint8Array; count: number },
): Promise<WriterProcess> {
  const dir = tempDir(`custody-${w.writerId}-`);
  const dataKeyFile = join(dir, "data.key");
  writeFileSync(dataKeyFile, w.dataKey, { mode: 0o600 });
  const ackLog = join(dir, "acks.log");
  const writer = { writerId: w.writerId, volume: w.volume, lanes: [{ lane: w.lane, fromLba: 0, toLba: w.blockCount - 1, holders: [...w.holders] }], contracts: [w.contract], holderSites: w.holderSites, topologyEpoch: 1, policyGeneration: 1 };
  const workload = { intervalMs: 0, depth: w.count, count: w.count, contract: { name: w.contract.name, timeoutMs: 15_000 }, ackLog };
  const file = join(dir, `${w.writerId}.json`);
  writeFileSync(file, JSON.stringify({ role: "writer", nats: { servers: bus.url }, controlRegion: bus.controlRegion, stateDir: join(dir, "state"), dataKeyFile, volume: { blockCount: w.blockCount }, writer, workload }));
  const p = DeployedProcess.role(w.writerId, "writer", file);
  await p.ready(READY_MS).catch(async (err: unknown) => {
    await p.signal("SIGKILL", 10_000);
    throw err;
  });
  return { process: p, ackLog };
}

/** The acknowledgement log's complete lines (a line torn by a SIGKILL is no acknowledgement). */
export const ackLines = readAckLog;
