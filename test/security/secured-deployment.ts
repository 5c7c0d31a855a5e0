/**
 * A small custody deployment on a secured bus, every actor logged in as its own principal:
 * writer w1 sends lane l0 of `vol` to h1 (same AZ, releasable) and h2 (other AZ); h2 forwards to
 * h3 (another region); controller c1 commits to the control stream the operator created; repair
 * r1 reads retained units. Roles and scopes are exactly what `permissionsFor` derives.
 */
import { join } from "node:path";
import { startController, type Controller } from "../../actors/controller/controller.ts";
import type { VolumeTopology } from "../../actors/controller/controller-config.ts";
import { startHolder, type Holder } from "../../actors/holder/holder.ts";
import { startVolumeWriter, type VolumeWriter } from "../../actors/writer/volume-writer.ts";
import { systemClock } from "../../core/clock.ts";
import { KeyAuthority } from "../../custody/key-authority.ts";
import { rawPublicKey } from "../../custody/signing.ts";
import { failureDomainOf } from "../../custody/failure-domain.ts";
import type { Site } from "../../policies/topology.ts";
import { initJetStreamControlLog, openJetStreamControlLog, type JetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";
import { e2eHolderConfig, site, tempDir } from "../e2e/e2e-fixture.ts";
import { KeyRing } from "../holder/holder-fixture.ts";
import { startSecuredBus, type PrincipalConnection, type PrincipalSpec, type SecuredBus } from "./secured-bus.ts";

export const VOL = "vol";
export const LANE = "l0";
export const REGION = "sec";
export const BLOCKS = 64;
export const AZ_CONTRACT = { name: "az-loss", losses: ["az:use1-az1"] };

export const SITES: Record<string, Site> = {
  "s-w": site("s-w", "us-east", "use1-az1"),
  "s-1": site("s-1", "us-east", "use1-az1"),
  "s-2": site("s-2", "us-east", "use1-az2"),
  "s-3": site("s-3", "us-west", "usw2-a"),
};
/** Holder → [site, upstream, downstream]. */
export const HOLDERS: Record<string, [string, string[], string[]]> = {
  h1: ["s-1", ["w1"], []],
  h2: ["s-2", ["w1"], ["h3"]],
  h3: ["s-3", ["h2"], []],
};
const FIRST_HOPS = ["h1", "h2"];

/** The principals of the deployment, keyed by id (plus `op` for the operator, `r1` for repair). */
export const PRINCIPALS: PrincipalSpec[] = [
  { key: "w1", role: "writer", id: "w1", scope: { controlRegion: REGION, volume: VOL, lanes: [{ lane: LANE, firstHops: FIRST_HOPS }] } },
  ...Object.entries(HOLDERS).map(([id, [, , downstream]]): PrincipalSpec => ({ key: id, role: "holder", id, scope: { controlRegion: REGION, lanes: [{ volume: VOL, lane: LANE, downstream }] } })),
  { key: "c1", role: "controller", id: "c1", scope: { controlRegion: REGION, volumes: [VOL], releaseTo: Object.keys(HOLDERS) } },
  { key: "r1", role: "repair", id: "r1", scope: { controlRegion: REGION, volumes: [VOL] } },
  { key: "op", role: "operator", id: "op", scope: {} },
];

/** The controller's view of the deployment's volume. */
export function topology(): VolumeTopology {
  const ids = Object.keys(SITES);
  const links = ids.flatMap((a, i) => ids.slice(i + 1).map((b) => ({ id: `${a}-${b}`, from: a, to: b, bandwidthBytesPerSec: 125_000_000, deps: [] })));
  return {
    volume: VOL,
    lanes: [LANE],
    writerSite: "s-w",
    sites: Object.values(SITES),
    holderSites: Object.fromEntries(Object.entries(HOLDERS).map(([h, [s]]) => [h, s])),
    bases: [{ id: "genesis", holder: "h3", cut: { [LANE]: 0 }, bytes: 0 }],
    keyAuthorities: [{ id: "ka", site: "s-3" }],
    links,
    recovery: { destination: "s-3", detectSec: 5, authorizeSec: 1, acquireCapacitySec: 2, persistSec: 1, validateSec: 1 },
    scenarios: [{ name: "AZ use1-az1 lost", losses: [{ domain: "az:use1-az1", kind: "site_destruction" }], deadlineSec: 600, required: true, destination: "s-3" }],
    timelines: [],
    staleAfterMs: 10_000,
    releasable: ["h1"],
  };
}

export interface SecuredDeployment {
  readonly bus: SecuredBus;
  readonly keys: KeyRing;
  readonly holders: ReadonlyMap<string, Holder>;
  readonly writer: VolumeWriter;
  readonly controller: Controller;
  readonly store: JetStreamControlLog;
  /** The connection each actor runs on, by principal key. */
  readonly conns: ReadonlyMap<string, PrincipalConnection>;
  stop(): Promise<void>;
}

/** Starts the bus, lets the operator create the control stream, then every actor as its own principal. */
export async function deploySecured(): Promise<SecuredDeployment> {
  const bus = await startSecuredBus(PRINCIPALS);
  const conns = new Map<string, PrincipalConnection>();
  const stops: (() => Promise<void> | void)[] = [];
  const conn = async (key: string) => {
    const c = await bus.connect(key);
    conns.set(key, c);
    return c;
  };
  // The operator creates the control stream; nobody else may.
  const op = await conn("op");
  await (await initJetStreamControlLog(op.transport.connection, { region: REGION })).log.close();

  const keys = new KeyRing();
  const holders = new Map<string, Holder>();
  for (const [id, [siteId, upstream, downstream]] of Object.entries(HOLDERS)) {
    const c = await conn(id);
    keys.add(id, 1);
    const h = await startHolder(e2eHolderConfig(id, SITES[siteId]!, VOL, [{ lane: LANE, upstream, downstream }]), { transport: c.transport, clock: systemClock, privateKey: keys.privateKey(id), peers: keys });
    holders.set(id, h);
    stops.push(() => h.stop());
  }

  const ctl = await conn("c1");
  const store = await openJetStreamControlLog(ctl.transport.connection, { region: REGION });
  const controller = await startController({ controllerId: "c1", region: REGION, topology: topology(), evalIntervalMs: 50, releaseEveryMs: 100 }, { transport: ctl.transport, clock: systemClock, store });
  stops.push(async () => {
    controller.stop();
    await store.close();
  });
  const all = Object.keys(HOLDERS);
  await controller.bootstrap(
    all.map((h) => {
      const s = SITES[HOLDERS[h]![0]]!;
      return { holderId: h, incarnation: 1, publicKey: rawPublicKey(keys.key(h, 1)!), failureDomain: failureDomainOf(s) };
    }),
    all,
  );

  const w = await conn("w1");
  const dir = join(tempDir("custody-secured-writer-"), "vol");
  await SmartWalVolume.create(dir, { blockCount: BLOCKS, walCapacity: 4096 });
  const volume = await SmartWalVolume.open(dir);
  const authority = new KeyAuthority("ka", "s-3");
  authority.authorize(VOL, "w1");
  const writer = startVolumeWriter(
    {
      writerId: "w1",
      volume: VOL,
      term: 1,
      lanes: [{ lane: LANE, fromLba: 0, toLba: BLOCKS - 1, holders: FIRST_HOPS }],
      contracts: [AZ_CONTRACT],
      holderSites: Object.fromEntries(Object.entries(HOLDERS).map(([h, [s]]) => [h, SITES[s]!])),
      topologyEpoch: 1,
      policyGeneration: 1,
    },
    { transport: w.transport, clock: systemClock, volume, dataKey: authority.dataKey(VOL, "w1"), peers: keys },
  );
  stops.push(async () => {
    writer.stop();
    await volume.close().catch(() => undefined);
  });
  return {
    bus,
    keys,
    holders,
    writer,
    controller,
    store,
    conns,
    async stop() {
      for (const s of stops.reverse()) await Promise.resolve(s()).catch(() => undefined);
      await bus.stop();
    },
  };
}
