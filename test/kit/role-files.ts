import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { applyBootstrap, holderRoleConfig, writerRoleConfig } from "../../policies/deploy/index.ts";
import type { ControlLogStore } from "../../custody/index.ts";
import { failureDomainOf, generateHolderKeyPair } from "../../custody/index.ts";
import type { Site } from "../../policies/index.ts";
import type { NatsRoleConfig } from "../../actors/runtime/index.ts";

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
export function writeHolderRole(
  dir: string,
  h: HarnessHolder,
  controlRegion: string,
): { file: string; publicKey: Uint8Array } {
  const kp = generateHolderKeyPair();
  const keyFile = join(dir, `${h.id}.key`);
  writeFileSync(keyFile, kp.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600 });
  const file = join(dir, `${h.id}.json`);
  const config = holderRoleConfig({
    id: h.id,
    site: h.site,
    nats: h.nats,
    controlRegion,
    stateDir: join(dir, h.id),
    keyFile,
    disk: h.disk,
    lanes: [{ volume: h.volume, lane: h.lane, upstream: h.upstream, downstream: h.downstream }],
    overrides: h.overrides,
  });
  writeFileSync(file, JSON.stringify(config));
  return { file, publicKey: kp.publicKey };
}

/**
 * The operator's bootstrap of a fresh control log: admits each holder's first incarnation and
 * creates the lane's obligation over all of them.
 */
export async function bootstrapControlLog(
  store: ControlLogStore,
  holders: readonly { id: string; site: Site; publicKey: Uint8Array }[],
  obligation: { volume: string; lane: string },
): Promise<void> {
  await applyBootstrap(store, {
    controlRegion: store.region,
    operatorId: "operator",
    controllers: [],
    holders: holders.map((h) => ({
      id: h.id,
      incarnation: 1,
      publicKey: Buffer.from(h.publicKey).toString("hex"),
      failureDomain: failureDomainOf(h.site),
    })),
    obligations: [{ volume: obligation.volume, lane: obligation.lane, holders: holders.map((h) => h.id) }],
  });
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
  const lanes = [{ lane: w.lane, fromLba: 0, toLba: w.blockCount - 1, holders: [...w.firstHops] }];
  writeFileSync(
    file,
    JSON.stringify(
      writerRoleConfig({
        writerId: "w1",
        nats: w.nats,
        controlRegion,
        stateDir: w.stateDir,
        dataKeyFile: w.dataKeyFile,
        volume: w.volume,
        blockCount: w.blockCount,
        lanes,
        holderSites: w.holderSites,
        workload: w.workload,
      }),
    ),
  );
  return file;
}
