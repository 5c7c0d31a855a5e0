import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CustodyError } from "../core/index.ts";
import {
  ControlLogFollower,
  publicKeyFromRaw,
  type HolderStatus,
  type ControlState,
  type ControlTrust,
} from "../custody/index.ts";
import { openJetStreamControlLog, type NatsConnection } from "../transport/index.ts";

/**
 * What should be running, for `custody ps`: every role instance `custody init` planned (the
 * deployment's `roles.json`) and every holder and controller the control log admitted since (its
 * region and operator key from the deployment's `bootstrap.json`). A holder the log retired is no
 * longer expected to run; one it declared failed still is (failed, not taken out of the plan).
 */

/** A role that should run, and why. */
export interface ExpectedRole {
  readonly role: string;
  readonly id: string;
  /** Where `roles.json` places it. */
  readonly region?: string;
  readonly planned: boolean;
  /** The incarnation the control log admitted last, and that holder's status there. */
  readonly logIncarnation?: number;
  readonly logStatus?: HolderStatus;
}

/** Thrown for a `roles.json` or `bootstrap.json` that does not read as `custody init` writes it. */
export class DeploymentIndexError extends CustodyError {
  constructor(file: string, why: string) {
    super("bad_deployment_index", `${file}: ${why}`, { file });
  }
}

function readJson(file: string): Record<string, unknown> {
  try {
    const v = JSON.parse(readFileSync(file, "utf8")) as unknown;
    if (typeof v !== "object" || v === null) throw new Error("not a JSON object");
    return v as Record<string, unknown>;
  } catch (err) {
    throw new DeploymentIndexError(file, (err as Error).message);
  }
}

/**
 * The role instances `roles.json` in `deploymentDir` lists; an instance is `<role>-<id>` (a base
 * builder's id is its instance name).
 */
export function plannedRoles(deploymentDir: string): ExpectedRole[] {
  const file = join(deploymentDir, "roles.json");
  const roles = readJson(file)["roles"];
  if (!Array.isArray(roles)) throw new DeploymentIndexError(file, "no roles list");
  return roles.map((r: { instance?: unknown; role?: unknown; region?: unknown }) => {
    if (typeof r.instance !== "string" || typeof r.role !== "string" || !r.instance.startsWith(`${r.role}-`))
      throw new DeploymentIndexError(file, `a role entry without <role>-<id> instance: ${JSON.stringify(r)}`);
    const id = r.role === "base-builder" ? r.instance : r.instance.slice(r.role.length + 1);
    return { role: r.role, id, planned: true, ...(typeof r.region === "string" ? { region: r.region } : {}) };
  });
}

/**
 * The control log's region and whom its readers trust, from `bootstrap.json` in `deploymentDir`;
 * undefined without one.
 */
export function controlLogOf(deploymentDir: string): { region: string; trust?: ControlTrust } | undefined {
  const file = join(deploymentDir, "bootstrap.json");
  if (!existsSync(file)) return undefined;
  const b = readJson(file);
  if (typeof b["controlRegion"] !== "string") throw new DeploymentIndexError(file, "no controlRegion");
  const key = b["operatorPublicKey"];
  if (typeof key !== "string") return { region: b["controlRegion"] };
  if (!/^[0-9a-f]{64}$/i.test(key)) throw new DeploymentIndexError(file, "operatorPublicKey is not 64 hex digits");
  const trust = {
    operators: { [String(b["operatorId"] ?? "operator")]: publicKeyFromRaw(new Uint8Array(Buffer.from(key, "hex"))) },
  };
  return { region: b["controlRegion"], trust };
}

/** Reads the control log of `region` once over `nc` (bounded by `timeoutMs` per request). */
export async function readControlState(
  nc: NatsConnection,
  log: { region: string; trust?: ControlTrust },
  timeoutMs: number,
): Promise<ControlState> {
  const store = await openJetStreamControlLog(nc, { region: log.region, timeoutMs });
  return await new ControlLogFollower(store, undefined, log.trust).refresh();
}

/** The holders (with their status: a retired one is not expected to run) and controllers `state` admitted. */
export function loggedRoles(state: ControlState): ExpectedRole[] {
  const holders = Object.values(state.holders).map((h) => ({
    role: "holder",
    id: h.holderId,
    planned: false,
    logIncarnation: h.incarnation,
    logStatus: h.status,
  }));
  const controllers = Object.keys(state.controllers ?? {}).map((id) => ({ role: "controller", id, planned: false }));
  return [...holders, ...controllers];
}

/** `planned` and `logged` merged per role and id (the plan's region, the log's incarnation and status). */
export function mergeExpected(planned: readonly ExpectedRole[], logged: readonly ExpectedRole[]): ExpectedRole[] {
  const out = new Map<string, ExpectedRole>();
  for (const e of [...planned, ...logged]) {
    const k = `${e.role}/${e.id}`;
    const had = out.get(k);
    out.set(
      k,
      had === undefined
        ? e
        : {
            ...had,
            ...e,
            planned: had.planned || e.planned,
            ...(had.region !== undefined ? { region: had.region } : {}),
          },
    );
  }
  return [...out.values()];
}
