import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../core/clock.ts";
import { commitControlEvent } from "../custody/control-commit.ts";
import { ControlLogFollower } from "../custody/control-log-follower.ts";
import type { ControlLogStore } from "../custody/control-log.ts";
import { generateHolderKeyPair } from "../custody/signing.ts";
import type { Site } from "../policies/index.ts";
import type { NatsRoleConfig } from "../runtime/role-config.ts";

/** One holder of a harness deployment (chaos, soak): where it sits and how its lane is chained. */
export interface HarnessHolder {
  readonly id: string;
  readonly site: Site;
  readonly nats: NatsRoleConfig;
  readonly volume: string;
  readonly lane: string;
  readonly upstream: readonly string[];
  readonly downstream: readonly string[];
  readonly disk: boolean;
  /** Overrides of the holder configuration (arena, flush, receipts, ...). */
  readonly overrides?: Record<string, unknown>;
}

/**
 * Writes a holder's signing key (mode 0600) and its `custody run holder` configuration into `dir`,
 * as an operator's provisioning would. Returns the config file and the public key to admit.
 */
export function writeHolderRole(dir: string, h: HarnessHolder, controlRegion: string): { file: string; publicKey: Uint8Array } {
  const kp = generateHolderKeyPair();
  const keyFile = join(dir, `${h.id}.key`);
  writeFileSync(keyFile, kp.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const holder = {
    holderId: h.id,
    site: { region: h.site.region, az: h.site.az, host: h.site.host },
    residency: h.disk ? ["ram", "disk"] : ["ram"],
    lanes: [{ volume: h.volume, lane: h.lane, upstream: h.upstream, downstream: h.downstream }],
    arena: { segmentBytes: 256 * 1024, limitBytes: 32 * 1024 * 1024, maxOutstandingCredit: 1024 * 1024, maxUnitBytes: 128 * 1024 },
    receipts: { maxUnits: 32, maxDelayMs: 10 },
    ...(h.disk ? { flush: { intervalMs: 100, deadlineMs: 5_000 } } : {}),
    resendAfterMs: 500,
    epoch: 1,
    policyGeneration: 1,
    ...h.overrides,
  };
  const file = join(dir, `${h.id}.json`);
  writeFileSync(file, JSON.stringify({ role: "holder", nats: h.nats, controlRegion, stateDir: join(dir, h.id), keyFile, holder }));
  return { file, publicKey: kp.publicKey };
}

/**
 * The operator's bootstrap of a fresh control log: admits each holder's first incarnation and
 * creates the lane's obligation over all of them.
 */
export async function bootstrapControlLog(store: ControlLogStore, holders: readonly { id: string; site: Site; publicKey: Uint8Array }[], obligation: { volume: string; lane: string }): Promise<void> {
  const follower = new ControlLogFollower(store);
  const op = { controller: "operator", clock: systemClock };
  for (const h of holders) {
    await commitControlEvent(store, follower, op, () => ({ type: "admit_holder", holderId: h.id, incarnation: 1, publicKey: h.publicKey, failureDomain: `${h.site.region}/${h.site.az}/${h.site.host}` }));
  }
  await commitControlEvent(store, follower, op, () => ({
    type: "create_obligation",
    obligationId: `${obligation.volume}-${obligation.lane}`,
    volume: obligation.volume,
    lane: obligation.lane,
    representation: "raw",
    holders: holders.map((h) => h.id),
    fromSeq: 1,
  }));
}

/** The writer of a harness deployment: one volume with one lane over all its blocks, and its workload. */
export interface HarnessWriter {
  readonly nats: NatsRoleConfig;
  readonly stateDir: string;
  readonly dataKeyFile: string;
  readonly volume: string;
  readonly lane: string;
  readonly blockCount: number;
  /** First-hop holders of the lane. */
  readonly firstHops: readonly string[];
  readonly holderSites: Readonly<Record<string, Site>>;
  /** The `custody run writer` workload section. */
  readonly workload: Record<string, unknown>;
}

/** Writes the `custody run writer` configuration of a harness writer (`w1`) and returns its path. */
export function writeWriterRole(file: string, w: HarnessWriter, controlRegion: string): string {
  writeFileSync(
    file,
    JSON.stringify({
      role: "writer",
      nats: w.nats,
      controlRegion,
      stateDir: w.stateDir,
      dataKeyFile: w.dataKeyFile,
      volume: { blockCount: w.blockCount },
      writer: { writerId: "w1", volume: w.volume, lanes: [{ lane: w.lane, fromLba: 0, toLba: w.blockCount - 1, holders: [...w.firstHops] }], contracts: [], holderSites: w.holderSites, topologyEpoch: 1, policyGeneration: 1, resendAfterMs: 500 },
      workload: w.workload,
    }),
  );
  return file;
}
