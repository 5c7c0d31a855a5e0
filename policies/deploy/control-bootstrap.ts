import { systemClock } from "../../core/index.ts";
import { commitControlEventRetrying } from "../../custody/index.ts";
import { createPublicKey } from "node:crypto";
import {
  ControlLogFollower,
  publicKeyFromRaw,
  type ControlLogStore,
  type ControlSigner,
  type ControlTrust,
} from "../../custody/index.ts";
import type { BootstrapPlan } from "./deployment-plan.ts";
import { DeploymentError } from "./deployment-schema.ts";

/** What a bootstrap committed and what it found already there. */
export interface BootstrapResult {
  /** Controllers whose signing keys were admitted now (a signed log). */
  readonly controllers: readonly string[];
  readonly admitted: readonly string[];
  readonly obligations: readonly string[];
  /** Holders already admitted and obligations already created (a bootstrap run again). */
  readonly skipped: readonly string[];
}

/**
 * The operator's bootstrap of a control log: admits the controllers' signing keys with the volumes
 * each may commit for, each holder's first incarnation with its key, failure domain and the volumes
 * it is bound to, and creates each lane's obligation over the holders that serve it (a coalesced
 * stream's derived lane as `coalesced`, over the stream's holders). With `signer` (the operator's
 * key) every event is signed and the log is read as a signed log; without it, unsigned. What the
 * log already has is left alone, so running it twice changes nothing.
 */
export async function applyBootstrap(
  store: ControlLogStore,
  plan: BootstrapPlan,
  signer?: ControlSigner,
): Promise<BootstrapResult> {
  const trust: ControlTrust | undefined =
    signer === undefined ? undefined : { operators: { [signer.id]: createPublicKey(signer.privateKey) } };
  const follower = new ControlLogFollower(store, undefined, trust);
  const op = { controller: signer?.id ?? plan.operatorId, clock: systemClock, ...(signer ? { signer } : {}) };
  const log: BootstrapLog = { store, follower, op };
  const skipped: string[] = [];
  // Only a signed log knows controllers' keys.
  const controllers = signer !== undefined ? await admitControllers(log, plan) : [];
  const admitted = await admitHolders(log, plan, skipped);
  const obligations = await createObligations(log, plan, skipped);
  return { controllers, admitted, obligations, skipped };
}

/** The log a bootstrap commits to, and as whom. */
interface BootstrapLog {
  readonly store: ControlLogStore;
  readonly follower: ControlLogFollower;
  readonly op: Parameters<typeof commitControlEventRetrying>[2];
}

/** Admits each controller's signing key for its volumes; returns the controllers admitted now. */
async function admitControllers({ store, follower, op }: BootstrapLog, plan: BootstrapPlan): Promise<string[]> {
  const controllers: string[] = [];
  for (const c of plan.controllers) {
    const publicKey = new Uint8Array(Buffer.from(c.publicKey, "hex"));
    publicKeyFromRaw(publicKey);
    const volumes = [...new Set(c.volumes)].sort();
    const have = (await follower.refresh()).controllers?.[c.id];
    // Admitted with another key, or unscoped / for other volumes (a log from before scoping): admitted again.
    if (have !== undefined && Buffer.from(have.publicKey).equals(publicKey) && sameVolumes(have.volumes, volumes))
      continue;
    await commitControlEventRetrying(store, follower, op, () => ({
      type: "admit_controller",
      controllerId: c.id,
      publicKey,
      volumes,
    }));
    controllers.push(c.id);
  }
  return controllers;
}

/** Admits each holder's first incarnation; returns the holders admitted now, adds those already there to `skipped`. */
async function admitHolders(
  { store, follower, op }: BootstrapLog,
  plan: BootstrapPlan,
  skipped: string[],
): Promise<string[]> {
  const admitted: string[] = [];
  for (const h of plan.holders) {
    if (!/^[0-9a-f]{64}$/i.test(h.publicKey))
      throw new DeploymentError(`bootstrap: holder ${h.id}: publicKey is not 64 hex digits`, {
        path: `holders.${h.id}.publicKey`,
      });
    const publicKey = new Uint8Array(Buffer.from(h.publicKey, "hex"));
    publicKeyFromRaw(publicKey); // bytes that are not a key are refused before anything is committed
    if ((await follower.refresh()).holders[h.id] !== undefined) {
      skipped.push(`holder ${h.id}`);
      continue;
    }
    const volumes =
      h.volumes ?? [...new Set(plan.obligations.filter((o) => o.holders.includes(h.id)).map((o) => o.volume))].sort();
    if (volumes.length === 0)
      throw new DeploymentError(
        `bootstrap: holder ${h.id} is in no obligation and names no volumes: it would be bound to every volume`,
        { path: `holders.${h.id}.volumes` },
      );
    await commitControlEventRetrying(store, follower, op, () => ({
      type: "admit_holder",
      holderId: h.id,
      incarnation: h.incarnation,
      publicKey,
      failureDomain: h.failureDomain,
      volumes,
    }));
    admitted.push(h.id);
  }
  return admitted;
}

/** Creates each lane's obligation; returns those created now, adds those already there to `skipped`. */
async function createObligations(
  { store, follower, op }: BootstrapLog,
  plan: BootstrapPlan,
  skipped: string[],
): Promise<string[]> {
  const obligations: string[] = [];
  for (const o of plan.obligations) {
    const obligationId = `${o.volume}-${o.lane}`;
    if ((await follower.refresh()).obligations[obligationId] !== undefined) {
      skipped.push(`obligation ${obligationId}`);
      continue;
    }
    await commitControlEventRetrying(store, follower, op, () => ({
      type: "create_obligation",
      obligationId,
      volume: o.volume,
      lane: o.lane,
      representation: o.representation ?? "raw",
      holders: [...o.holders],
      fromSeq: 1,
    }));
    obligations.push(obligationId);
  }
  return obligations;
}

function sameVolumes(a: readonly string[] | undefined, b: readonly string[]): boolean {
  return a !== undefined && a.length === b.length && [...a].sort().every((v, i) => v === b[i]);
}
