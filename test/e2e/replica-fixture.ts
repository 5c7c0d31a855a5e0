import { join } from "node:path";
import { startReplica, type Replica } from "../../actors/replica/replica.ts";
import { startPrimaryCatchUp, type PrimaryCatchUpConfig, type PrimaryCatchUpService } from "../../actors/replica/primary-catch-up-service.ts";
import { nodeFileLayer } from "../../core/file-layer.ts";
import type { KeyAuthority } from "../../custody/key-authority.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { tempDir } from "./e2e-fixture.ts";

/** Replica volumes in these tests: 64 blocks. */
export const BLOCKS = 64;

export interface OpenReplica {
  replica: Replica;
  vol: SmartWalVolume;
  t: NatsTransport;
  close(): Promise<void>;
}

/** A replica `id` of `volume` on its own NATS connection, materializing into `dir`. */
export async function openReplica(url: string, volume: string, dir: string, authority: KeyAuthority, id = "r1"): Promise<OpenReplica> {
  const vol = await SmartWalVolume.open(dir);
  const t = await NatsTransport.connect({ servers: url, name: id });
  authority.authorize(volume, id);
  const replica = await startReplica(
    { replicaId: id, volume, lanes: ["l0"], upstream: ["w1"], term: 1 },
    { transport: t, volume: vol, dataKey: authority.dataKey(volume, id), files: nodeFileLayer, positionPath: join(dir, "..", `${id}-position`) },
  );
  return {
    replica,
    vol,
    t,
    async close() {
      replica.stop();
      await vol.close();
      await t.close();
    },
  };
}

export async function newReplicaDir(blocks = BLOCKS): Promise<string> {
  const dir = join(tempDir("custody-replica-"), "vol");
  await SmartWalVolume.create(dir, { blockCount: blocks, walCapacity: 4096 });
  return dir;
}

/** The primary's catch-up service for `primary`, on a NATS connection of its own (as the writer's process would run it). */
export async function servePrimary(url: string, primary: SmartWalVolume, authority: KeyAuthority, config: PrimaryCatchUpConfig): Promise<{ service: PrimaryCatchUpService; close(): Promise<void> }> {
  const t = await NatsTransport.connect({ servers: url, name: "primary" });
  authority.authorize(config.volume, "w1");
  const service = await startPrimaryCatchUp(config, { transport: t, volume: primary, dataKey: authority.dataKey(config.volume, "w1") });
  return {
    service,
    async close() {
      service.stop();
      await t.close();
    },
  };
}
