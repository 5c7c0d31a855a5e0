import { join } from "node:path";
import {
  inboxPrefixFor,
  permissionsFor,
  renderRegionSecurity,
  type NkeyUser,
  type PrincipalSpec,
  type ServerIdentity,
} from "../../transport/security/index.ts";
import type { NatsRoleConfig } from "../../actors/runtime/index.ts";
import type { Deployment } from "./deployment-schema.ts";
import { servedLanes } from "./deployment-coalesced.ts";

/**
 * The NATS identities of a secured deployment: one nkey user per role instance and one for the
 * operator, each with the permissions `permissionsFor` derives from where it sits in the
 * deployment, and the TLS files every server and client uses. Pure: seeds come from the caller.
 */

/** One principal of a deployment: the instance it belongs to (`operator` for the operator) and its spec. */
export interface DeploymentPrincipal {
  readonly instance: string;
  readonly spec: PrincipalSpec;
}

/** A new nkey user: its seed (the secret, `SU...`) and public key (`U...`). */
export interface NkeyUserKey {
  readonly seed: string;
  readonly publicKey: string;
}

/** Where the TLS files of a secured deployment live, on the servers' machines. */
export interface DeploymentTlsPaths {
  /** Directory of the CA certificate and each region's server certificate and key. */
  readonly dir: string;
}

/** The nkey seed file name inside a role instance's directory (and the operator's). */
export const NKEY_SEED_FILE = "nats.nk";
/** The CA certificate file name inside a role instance's directory (and the operator's). */
export const CA_FILE = "ca.pem";
/**
 * The operator's connection file `custody init` writes (`operator/nats.json`): what the operator
 * commands connect with.
 */
export const OPERATOR_NATS_FILE = "nats.json";

/**
 * Every principal of the deployment: holders, writers, controllers and base builders as their role
 * instances (a holder with the derived lanes of a coalesced stream it serves), then the operator
 * (`operatorId`), which commits to the control log of `controlRegion`.
 */
export function deploymentPrincipals(
  d: Deployment,
  operatorId: string,
  lanesOf: (v: Deployment["volumes"][number]) => { lane: string; holders: string[] }[],
): DeploymentPrincipal[] {
  const out: DeploymentPrincipal[] = [];
  const controlRegion = d.controlRegion;
  for (const h of d.holders) {
    out.push({
      instance: `holder-${h.id}`,
      spec: {
        role: "holder",
        id: h.id,
        scope: {
          controlRegion,
          lanes: servedLanes(d, h).map((l) => ({ volume: l.volume, lane: l.lane, downstream: [...l.downstream] })),
        },
      },
    });
  }
  for (const v of d.volumes) {
    out.push({
      instance: `writer-${v.writer.id}`,
      spec: {
        role: "writer",
        id: v.writer.id,
        scope: { controlRegion, volume: v.id, lanes: lanesOf(v).map((l) => ({ lane: l.lane, firstHops: l.holders })) },
      },
    });
  }
  for (const c of d.controllers)
    out.push({
      instance: `controller-${c.id}`,
      spec: {
        role: "controller",
        id: c.id,
        scope: { controlRegion, volumes: [c.volume], releaseTo: holdersOfVolume(d, c.volume) },
      },
    });
  // A base builder's process is known by its instance name (its service id); it fetches its holder's
  // units of its volume.
  for (const b of d.baseBuilders)
    out.push({
      instance: `base-builder-${b.holder}`,
      spec: { role: "base-builder", id: `base-builder-${b.holder}`, scope: { holder: b.holder, volume: b.volume } },
    });
  out.push({
    instance: operatorId,
    spec: {
      role: "operator",
      id: operatorId,
      scope: { controlRegions: [controlRegion], commitRegions: [controlRegion] },
    },
  });
  return out;
}

/**
 * The holders that serve a lane of `volume` (standbys and a coalesced stream's holders included):
 * where its controller sends release frontiers.
 */
export function holdersOfVolume(d: Deployment, volume: string): string[] {
  return d.holders.filter((h) => servedLanes(d, h).some((l) => l.volume === volume)).map((h) => h.id);
}

const IP_ADDRESS = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:]*)$/;

/**
 * The servers to certify: one per region, named after it, reachable at its host (and listen
 * address). Why `localhost` beside an IP address: nats.js sends no TLS server name when it dials
 * an address, and Node then checks the certificate against `localhost`.
 */
export function regionServerIdentities(d: Deployment): ServerIdentity[] {
  return Object.entries(d.regions).map(([name, r]) => {
    const hosts = [r.host, ...(r.listen !== undefined && r.listen !== "0.0.0.0" ? [r.listen] : [])];
    if (hosts.some((h) => IP_ADDRESS.test(h))) hosts.push("localhost");
    return { name, hosts: [...new Set(hosts)] };
  });
}

/** The CA and a region's certificate and key under the TLS directory (`makeCertificates`' names). */
export function regionTlsFiles(
  tls: DeploymentTlsPaths,
  region: string,
): { caFile: string; certFile: string; keyFile: string } {
  return {
    caFile: join(tls.dir, "ca.pem"),
    certFile: join(tls.dir, `${region}-cert.pem`),
    keyFile: join(tls.dir, `${region}-key.pem`),
  };
}

/**
 * The security lines of a region's nats-server config: every principal as an nkey user with its
 * permissions, TLS for clients, and TLS with verified peers on the cluster route and gateways.
 */
export function regionSecurityText(
  users: readonly NkeyUser[],
  tls: DeploymentTlsPaths,
  region: string,
): ReturnType<typeof renderRegionSecurity> {
  return renderRegionSecurity(users, regionTlsFiles(tls, region));
}

/** The nkey user of each principal, labelled `<role> <id>`, for the servers' authorization block. */
export function deploymentUsers(
  principals: readonly DeploymentPrincipal[],
  keyOf: (instance: string) => NkeyUserKey,
): NkeyUser[] {
  return principals.map((p) => ({
    nkey: keyOf(p.instance).publicKey,
    permissions: permissionsFor(p.spec.role, p.spec.id, p.spec.scope as never),
    label: `${p.spec.role} ${p.spec.id}`,
  }));
}

/** The `nats` section of a principal on a secured deployment: its seed file, inbox prefix and the CA beside it. */
export function securedNats(servers: string, dir: string, spec: PrincipalSpec): NatsRoleConfig {
  return {
    servers,
    credentials: { nkeySeedFile: join(dir, NKEY_SEED_FILE), inboxPrefix: inboxPrefixFor(spec.role, spec.id) },
    tls: { caFile: join(dir, CA_FILE) },
  };
}
