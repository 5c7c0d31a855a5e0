import { join } from "node:path";
import type { Site } from "../index.ts";
import type { NatsRoleConfig } from "../../actors/runtime/index.ts";
import { DeploymentError, type Deployment, type DeploymentHolder, type DeploymentVolume } from "./deployment-schema.ts";
import {
  CA_FILE,
  deploymentPrincipals,
  deploymentUsers,
  NKEY_SEED_FILE,
  OPERATOR_NATS_FILE,
  regionSecurityText,
  securedNats,
  type DeploymentPrincipal,
  type NkeyUserKey,
} from "./deployment-security.ts";
import { controlServerConfig, natsServerConfig, regionUrl } from "./nats-server-config.ts";
import { controlLogTopology, type ControlLogTopology } from "./control-servers.ts";
import { failureDomainOf, writerSigningKey } from "../../custody/index.ts";
import { holderRoleConfig, writerRoleConfig } from "./role-configs.ts";
import { controllerConfig, shapedLinksOf } from "./controller-plan.ts";
import { volumeLanes } from "./volume-lanes.ts";
import { coalescedSpecOf, derivedObligations, derivedWriterLanes, servedLanes } from "./deployment-coalesced.ts";

/**
 * From a validated deployment to the files `custody init` writes: per role instance a
 * `custody run` config and its keys, per region a nats-server config, the operator's bootstrap of
 * the control log, and an index of the instances. Pure: keys come from the caller's `KeySource`.
 */

/** Where keys come from (the command passes real random keys; nothing here reads or writes). */
export interface KeySource {
  /** A new Ed25519 receipt-signing key pair: PKCS#8 DER private key, raw 32-byte public key. */
  holderKey(): { readonly pkcs8: Uint8Array; readonly publicRaw: Uint8Array };
  /** A new 32-byte volume data key. */
  dataKey(): Uint8Array;
}

/**
 * What a secured deployment's plan needs besides keys: new nkey users, and the CA certificate the
 * caller made (with `makeCertificates` into `tlsOutputDir(outDir)`) before planning.
 */
export interface SecuritySource {
  nkeyUser(): NkeyUserKey;
  /** The CA certificate (PEM) every role and the operator trust. */
  readonly caPem: string;
}

/** Where `custody init` makes the CA and the regions' server certificates: `nats/tls` in the output. */
export function tlsOutputDir(outDir: string): string {
  return join(outDir, "nats", "tls");
}

/** One file to write: `path` is inside the output directory; keys are 0600, the rest 0644. */
export interface PlannedFile {
  readonly path: string;
  readonly contents: string | Uint8Array;
  readonly mode: 0o600 | 0o644;
}

/** A role instance: what `custody run <role> --config <config>` starts on its machine. */
export interface PlannedRole {
  readonly instance: string;
  readonly role: "holder" | "writer" | "controller" | "base-builder";
  /** The NATS region it connects to. */
  readonly region: string;
  /** Its config file on the machine (under `paths.configDir`). */
  readonly config: string;
  /** The directory of the output that goes to `<configDir>/<instance>` on the machine. */
  readonly dir: string;
}

/**
 * What `custody bootstrap` commits to a fresh control log: the controllers' keys, first incarnations
 * and obligations.
 */
export interface BootstrapPlan {
  readonly controlRegion: string;
  /** The operator whose key signs the bootstrap and whom every role's `controlTrust` trusts. */
  readonly operatorId: string;
  /**
   * The operator's raw public key (64 hex digits) when the log is signed: bootstrap then needs the
   * matching private key.
   */
  readonly operatorPublicKey?: string;
  /**
   * Controllers whose signing keys the operator admits first (`admit_controller`): raw public keys,
   * 64 hex digits, and the volumes each may commit for (its events on any other volume are skipped).
   */
  readonly controllers: readonly {
    readonly id: string;
    readonly publicKey: string;
    readonly volumes: readonly string[];
  }[];
  /** `volumes`: what the holder is bound to (absent: the volumes of the obligations that name it). */
  readonly holders: readonly {
    readonly id: string;
    readonly incarnation: 1;
    readonly publicKey: string;
    readonly failureDomain: string;
    readonly volumes?: readonly string[];
  }[];
  /** `representation` only on a coalesced stream's derived lanes (absent: raw). */
  readonly obligations: readonly {
    readonly volume: string;
    readonly lane: string;
    readonly holders: readonly string[];
    readonly representation?: "raw" | "coalesced";
  }[];
  /**
   * A replicated control log: the bootstrap creates its stream with these replicas on this cluster
   * (absent: one replica where the bootstrap connects).
   */
  readonly controlStream?: { readonly replicas: number; readonly cluster: string };
}

/** A replica server of a replicated control log, as `roles.json` lists it. */
export interface PlannedControlServer {
  readonly region: string;
  /** The control log's cluster (and gateway) name. */
  readonly cluster: string;
  readonly serverName: string;
  readonly config: string;
  readonly httpPort: number;
}

/** Everything `custody init` writes. */
export interface DeploymentPlan {
  readonly files: readonly PlannedFile[];
  readonly roles: readonly PlannedRole[];
  readonly natsServers: readonly { readonly region: string; readonly config: string; readonly url: string }[];
  /** The control log's replica servers (empty with a single-replica log): started beside their regions' servers. */
  readonly controlServers: readonly PlannedControlServer[];
  readonly bootstrap: BootstrapPlan;
  /** What the operator must know about the plan (e.g. a control log with a single replica). */
  readonly warnings: readonly string[];
}

/** The file index `custody init` writes beside the roles (`roles.json`). */
export const ROLES_INDEX = "roles.json";
/** The bootstrap file `custody init` writes (`bootstrap.json`). */
export const BOOTSTRAP_FILE = "bootstrap.json";
/** The operator of a deployment `custody init` writes: its key signs the control log's bootstrap and holds. */
export const OPERATOR_ID = "operator";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const json = (v: unknown) => JSON.stringify(v, null, 2) + "\n";

/** The `nats` section of a role's config on an unsecured deployment (`"security": "none"`, unit tests only). */
export function roleNats(d: Deployment, region: string): NatsRoleConfig {
  return { servers: regionUrl(d.regions[region]!) };
}

/**
 * Plans every file of a deployment. `outDir` is where the files are written (absolute). A secured
 * deployment (the default) needs `security`; one with `"security": "none"` ignores it.
 */
export function planDeployment(
  d: Deployment,
  outDir: string,
  keys: KeySource,
  security?: SecuritySource,
): DeploymentPlan {
  const secured = d.security !== "none";
  if (secured && security === undefined)
    throw new DeploymentError(
      'a secured deployment needs nkey users and a CA certificate to plan (or "security": "none")',
      { path: "security" },
    );
  const p = new DeploymentPlanner(d, outDir, keys, secured ? security : undefined);
  for (const h of d.holders) p.holder(h);
  for (const v of d.volumes) p.writer(v);
  for (const c of d.controllers) p.controller(c);
  for (const b of d.baseBuilders) p.baseBuilder(b);
  const control = controlLogTopology(d);
  const { natsServers, controlServers } = p.servers(control);
  const bootstrap = p.bootstrap(control);
  p.operatorFiles();
  const { files, roles } = p;
  files.push({ path: join(outDir, ROLES_INDEX), contents: json({ roles, natsServers, controlServers }), mode: 0o644 });
  return {
    files,
    roles,
    natsServers,
    controlServers,
    bootstrap,
    warnings: control.replicated || control.warning === undefined ? [] : [control.warning],
  };
}

type KeyPair = { pkcs8: Uint8Array; publicRaw: Uint8Array };

/**
 * The plan as it is built: the files and role instances so far, and the keys and connections they
 * share. Keys are drawn in a fixed order (nkey users, holders, data keys, then the operator and the
 * controllers when first needed), so the same key source gives the same plan.
 */
class DeploymentPlanner {
  readonly files: PlannedFile[] = [];
  readonly roles: PlannedRole[] = [];
  private readonly configDir: string;
  private readonly stateDir: string;
  /** The servers' TLS files, on the servers' machines (beside their configs). */
  private readonly natsDir: string;
  private readonly principals: DeploymentPrincipal[];
  private readonly userKeys: Map<string, NkeyUserKey>;
  private readonly holderKeys: Map<string, KeyPair>;
  private readonly dataKeys: Map<string, Uint8Array>;
  private operator: KeyPair | undefined;
  private readonly controllerKeys = new Map<string, KeyPair>();

  constructor(
    private readonly d: Deployment,
    private readonly outDir: string,
    private readonly keys: KeySource,
    /** Present exactly when the deployment is secured. */
    private readonly security: SecuritySource | undefined,
  ) {
    this.configDir = d.paths?.configDir ?? join(outDir, "roles");
    this.stateDir = d.paths?.stateDir ?? join(outDir, "state");
    this.natsDir = d.paths?.configDir !== undefined ? join(d.paths.configDir, "nats") : join(outDir, "nats");
    // A writer's permissions cover its raw lanes and a coalesced stream's derived lanes.
    this.principals = deploymentPrincipals(d, OPERATOR_ID, (v) => [...volumeLanes(d, v), ...derivedWriterLanes(d, v)]);
    this.userKeys = new Map(
      security !== undefined ? this.principals.map((p) => [p.instance, security.nkeyUser()]) : [],
    );
    this.holderKeys = new Map(d.holders.map((h) => [h.id, keys.holderKey()]));
    this.dataKeys = new Map(d.volumes.map((v) => [v.id, keys.dataKey()]));
  }

  /** Drawn after every holder's key, so holders' keys do not depend on how many controllers there are. */
  private operatorKey(): KeyPair {
    return (this.operator ??= this.keys.holderKey());
  }

  private controllerKey(name: string): KeyPair {
    if (!this.controllerKeys.has(name)) this.controllerKeys.set(name, this.keys.holderKey());
    return this.controllerKeys.get(name)!;
  }

  private principalOf(instance: string): DeploymentPrincipal {
    return this.principals.find((p) => p.instance === instance)!;
  }

  /** A role's connection: its region's URL and, when secured, its own seed file, inbox prefix and the CA. */
  private natsFor(instance: string, region: string): NatsRoleConfig {
    return this.security !== undefined
      ? securedNats(regionUrl(this.d.regions[region]!), join(this.configDir, instance), this.principalOf(instance).spec)
      : roleNats(this.d, region);
  }

  private siteOf(id: string): Site {
    const s = this.d.sites[id]!;
    return { id, region: s.region, az: s.az, host: s.host, deps: [...(s.deps ?? [])] };
  }

  private spanFile(id: string): string | undefined {
    return this.d.paths?.spanDir !== undefined ? join(this.d.paths.spanDir, `${id}.jsonl`) : undefined;
  }

  /**
   * One instance's files go to roles/<instance>/ in the output and to <configDir>/<instance>/ on
   * its machine. Every role reads a signed control log: the operator's public key goes beside each
   * config, and each controller signs with its own key (admitted by the operator at bootstrap).
   */
  private instance(
    name: string,
    role: PlannedRole["role"],
    region: string,
    config: Record<string, unknown>,
    extra: { file: string; contents: Uint8Array }[],
  ): void {
    const dir = join(this.outDir, "roles", name);
    for (const f of extra) this.files.push({ path: join(dir, f.file), contents: f.contents, mode: 0o600 });
    if (this.security !== undefined) {
      this.files.push({ path: join(dir, NKEY_SEED_FILE), contents: `${this.userKeys.get(name)!.seed}\n`, mode: 0o600 });
      this.files.push({ path: join(dir, CA_FILE), contents: this.security.caPem, mode: 0o644 });
    }
    this.files.push({
      path: join(dir, "operator.pub"),
      contents: `${hex(this.operatorKey().publicRaw)}\n`,
      mode: 0o644,
    });
    const signing = role === "controller";
    if (signing)
      this.files.push({ path: join(dir, "signing.key"), contents: this.controllerKey(name).pkcs8, mode: 0o600 });
    const controlTrust = {
      operators: [{ id: OPERATOR_ID, publicKeyFile: join(this.configDir, name, "operator.pub") }],
      ...(signing ? { signingKeyFile: join(this.configDir, name, "signing.key") } : {}),
    };
    this.files.push({ path: join(dir, "config.json"), contents: json({ ...config, controlTrust }), mode: 0o644 });
    this.roles.push({ instance: name, role, region, config: join(this.configDir, name, "config.json"), dir });
  }

  holder(h: DeploymentHolder): void {
    const d = this.d;
    const name = `holder-${h.id}`;
    const config = holderRoleConfig({
      id: h.id,
      site: d.sites[h.site]!,
      nats: this.natsFor(name, h.region),
      controlRegion: d.controlRegion,
      stateDir: join(this.stateDir, name),
      keyFile: join(this.configDir, name, "holder.key"),
      disk: h.residency === "disk",
      lanes: servedLanes(d, h),
      metrics: h.metrics,
      overrides: h.overrides,
      links: shapedLinksOf(d, h.site),
      spanFile: this.spanFile(h.id),
      drainDeadlineMs: h.drainDeadlineMs,
    });
    // A secured deployment signs units: the holder is given the public half of each of its volumes' writer keys.
    const volumes = [...new Set(servedLanes(d, h).map((l) => l.volume))];
    if (this.security !== undefined)
      config["writerKeys"] = volumes.map((v) => ({
        volume: v,
        fromTerm: 1,
        publicKey: hex(writerSigningKey(this.dataKeys.get(v)!).publicKey),
      }));
    const key = this.holderKeys.get(h.id)!;
    this.instance(name, "holder", h.region, config, [{ file: "holder.key", contents: key.pkcs8 }]);
  }

  writer(v: DeploymentVolume): void {
    const d = this.d;
    const name = `writer-${v.writer.id}`;
    const holders = d.holders.filter((h) => servedLanes(d, h).some((l) => l.volume === v.id));
    const config = writerRoleConfig({
      writerId: v.writer.id,
      nats: this.natsFor(name, v.writer.region),
      controlRegion: d.controlRegion,
      stateDir: join(this.stateDir, name),
      dataKeyFile: join(this.configDir, name, "data.key"),
      volume: v.id,
      blockCount: v.blockCount,
      walCapacity: v.walCapacity,
      lanes: volumeLanes(d, v),
      holderSites: Object.fromEntries(holders.map((h) => [h.id, this.siteOf(h.site)])),
      metrics: v.writer.metrics,
      workload: v.writer.workload,
      coalesced: v.coalesced !== undefined ? { ...coalescedSpecOf(v.coalesced) } : undefined,
      drainDeadlineMs: v.writer.drainDeadlineMs,
      links: shapedLinksOf(d, v.writer.site),
      spanFile: this.spanFile(v.writer.id),
    });
    if (this.security !== undefined) config["signUnits"] = true;
    this.instance(name, "writer", v.writer.region, config, [{ file: "data.key", contents: this.dataKeys.get(v.id)! }]);
  }

  controller(c: Deployment["controllers"][number]): void {
    const d = this.d;
    const v = d.volumes.find((x) => x.id === c.volume)!;
    const spans = this.spanFile(c.id);
    const controller = controllerConfig(
      d,
      c,
      v,
      (id) => this.siteOf(id),
      (h) => hex(this.holderKeys.get(h)!.publicRaw),
    );
    // Several controllers of one volume share it through the control lease: one active, the others standbys.
    const leased = c.lease !== undefined || d.controllers.filter((x) => x.volume === c.volume).length > 1;
    const config = {
      role: "controller",
      nats: this.natsFor(`controller-${c.id}`, c.region),
      ...(c.metrics ? { metrics: c.metrics } : {}),
      ...(spans !== undefined ? { spanFile: spans } : {}),
      controller,
      ...(leased ? { lease: { ...c.lease } } : {}),
    };
    this.instance(`controller-${c.id}`, "controller", c.region, config, []);
  }

  baseBuilder(b: Deployment["baseBuilders"][number]): void {
    const h = this.d.holders.find((x) => x.id === b.holder)!;
    const v = this.d.volumes.find((x) => x.id === b.volume)!;
    const name = `base-builder-${b.holder}`;
    const config = {
      role: "base-builder",
      nats: this.natsFor(name, h.region),
      ...(b.metrics ? { metrics: b.metrics } : {}),
      holder: b.holder,
      volume: b.volume,
      lane: b.lane,
      blockCount: v.blockCount,
      dir: join(this.stateDir, name),
      dataKeyFile: join(this.configDir, name, "data.key"),
      intervalMs: b.intervalMs,
      minNewSeqs: b.minNewSeqs,
      ...(b.maxSeqsPerBuild !== undefined ? { maxSeqsPerBuild: b.maxSeqsPerBuild } : {}),
      ...(b.buildTimeoutMs !== undefined ? { buildTimeoutMs: b.buildTimeoutMs } : {}),
    };
    const dataKey = this.dataKeys.get(b.volume)!;
    this.instance(name, "base-builder", h.region, config, [{ file: "data.key", contents: dataKey }]);
  }

  /** The nats-server configs: one per region, and a replicated control log's own servers. */
  servers(control: ControlLogTopology): Pick<DeploymentPlan, "natsServers" | "controlServers"> {
    const d = this.d;
    const natsServers = Object.keys(d.regions).map((r) => ({
      region: r,
      config: join(this.outDir, "nats", `${r}.conf`),
      url: regionUrl(d.regions[r]!),
    }));
    const users =
      this.security !== undefined ? deploymentUsers(this.principals, (instance) => this.userKeys.get(instance)!) : [];
    const securityOf = (region: string) =>
      this.security !== undefined ? regionSecurityText(users, { dir: join(this.natsDir, "tls") }, region) : undefined;
    for (const s of natsServers)
      this.files.push({
        path: s.config,
        contents: natsServerConfig(s.region, d.regions, securityOf(s.region), control),
        mode: 0o644,
      });
    if (!control.replicated) return { natsServers, controlServers: [] };
    // A replicated control log's servers: one per region of the first three, each beside its region's
    // server (its certificate).
    const controlServers: PlannedControlServer[] = control.servers.map((c) => ({
      region: c.region,
      cluster: control.cluster,
      serverName: c.serverName,
      config: join(this.outDir, "nats", `${c.serverName}.conf`),
      httpPort: c.httpPort,
    }));
    control.servers.forEach((c, i) =>
      this.files.push({
        path: controlServers[i]!.config,
        contents: controlServerConfig(c, control, d.regions, securityOf(c.region)),
        mode: 0o644,
      }),
    );
    return { natsServers, controlServers };
  }

  /** What `custody bootstrap` commits, written to `bootstrap.json`. */
  bootstrap(control: ControlLogTopology): BootstrapPlan {
    const d = this.d;
    const obligations = d.volumes.flatMap((v) => [
      ...volumeLanes(d, v).map((l) => ({
        volume: v.id,
        lane: l.lane,
        holders: d.holders
          .filter((h) => h.standby !== true && h.lanes.some((x) => x.volume === v.id && x.lane === l.lane))
          .map((h) => h.id),
      })),
      ...derivedObligations(d, v),
    ]);
    const bootstrap: BootstrapPlan = {
      controlRegion: d.controlRegion,
      operatorId: OPERATOR_ID,
      operatorPublicKey: hex(this.operatorKey().publicRaw),
      // Each controller may commit for its own volume only.
      controllers: d.controllers.map((c) => ({
        id: c.id,
        publicKey: hex(this.controllerKey(`controller-${c.id}`).publicRaw),
        volumes: [c.volume],
      })),
      // Standbys are admitted by their controller when it enlists them, never here. A holder is
      // bound to the volumes whose obligations name it.
      holders: d.holders
        .filter((h) => h.standby !== true)
        .map((h) => ({
          id: h.id,
          incarnation: 1 as const,
          publicKey: hex(this.holderKeys.get(h.id)!.publicRaw),
          failureDomain: failureDomainOf(d.sites[h.site]!),
          volumes: [...new Set(obligations.filter((o) => o.holders.includes(h.id)).map((o) => o.volume))].sort(),
        })),
      obligations,
      ...(control.replicated ? { controlStream: { replicas: control.replicas, cluster: control.cluster } } : {}),
    };
    this.files.push({ path: join(this.outDir, BOOTSTRAP_FILE), contents: json(bootstrap), mode: 0o644 });
    return bootstrap;
  }

  /** The operator's key pair and, when secured, its connection. */
  operatorFiles(): void {
    const dir = join(this.outDir, "operator");
    // The operator's own key: it signs `custody bootstrap` and `custody hold` (keep it off the role machines).
    this.files.push({ path: join(dir, "operator.key"), contents: this.operatorKey().pkcs8, mode: 0o600 });
    this.files.push({
      path: join(dir, "operator.pub"),
      contents: `${hex(this.operatorKey().publicRaw)}\n`,
      mode: 0o644,
    });
    if (this.security === undefined) return;
    // The operator's connection, used by every operator command (`--operator-config`): it reaches
    // the first controller's region (else the first region) as the operator principal.
    const region = this.d.controllers[0]?.region ?? Object.keys(this.d.regions)[0]!;
    const seed = `${this.userKeys.get(OPERATOR_ID)!.seed}\n`;
    this.files.push({ path: join(dir, NKEY_SEED_FILE), contents: seed, mode: 0o600 });
    this.files.push({ path: join(dir, CA_FILE), contents: this.security.caPem, mode: 0o644 });
    this.files.push({
      path: join(dir, OPERATOR_NATS_FILE),
      contents: json(securedNats(regionUrl(this.d.regions[region]!), dir, this.principalOf(OPERATOR_ID).spec)),
      mode: 0o644,
    });
  }
}
