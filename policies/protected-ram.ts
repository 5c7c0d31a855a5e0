import { z } from "zod";
import { PolicyInputError } from "./policy-errors.ts";
import { parseWith } from "./state-schema.ts";

/** A node whose protected RAM drains to another device when power or its host fails. */
export interface ProtectedRamNode {
  readonly id: string;
  readonly queuedProtectedBytes: number;
  /** Throughput reserved for this node's own drain path (bytes/s). */
  readonly reservedDrainBytesPerSec: number;
  readonly detectionSec: number;
  readonly persistenceCompletionSec: number;
  readonly marginSec: number;
  readonly usableHoldUpSec: number;
  readonly drainTarget: string;
  readonly controller: string;
  readonly link: string;
  readonly powerSupply: string;
}

/**
 * The memo's protected-RAM bound, the one place it is computed: queued bytes may be called
 * protected only while
 *   detection + queued / drain throughput + persistence completion + margin < usable hold-up time.
 * Holders (their receipts and their credits), the controller and `custody admit` all judge by it.
 */
export interface HoldUpBudget {
  readonly detectionSec: number;
  readonly persistenceCompletionSec: number;
  readonly marginSec: number;
  readonly usableHoldUpSec: number;
}

/** Seconds needed to preserve a queue whose drain takes `drainSec`. */
export function preservationSec(b: HoldUpBudget, drainSec: number): number {
  return b.detectionSec + drainSec + b.persistenceCompletionSec + b.marginSec;
}

/** True when a queue whose drain takes `drainSec` is preserved within the hold-up time (strictly). */
export function boundHolds(b: HoldUpBudget, drainSec: number): boolean {
  return preservationSec(b, drainSec) < b.usableHoldUpSec;
}

/**
 * The largest queue (bytes) the bound admits at `drainBytesPerSec`: one byte under the exact
 * limit (the inequality is strict). 0 when even an empty queue fails the bound.
 */
export function admissibleQueueBytes(b: HoldUpBudget, drainBytesPerSec: number): number {
  const slackSec = b.usableHoldUpSec - preservationSec(b, 0);
  if (!(slackSec > 0) || !(drainBytesPerSec > 0)) return 0;
  return Math.max(0, Math.floor(slackSec * drainBytesPerSec) - 1);
}

/**
 * The drain rate a node can count on when `sharers` nodes (itself included) drain into a target of
 * `capacityBytesPerSec` at the same moment: its own reserved rate, or its even share of the target,
 * whichever is lower. With equal queues this is exactly the rate `checkProtectedRamAdmission`
 * judges the node by, so a holder that admits by it never claims what the group check refuses.
 */
export function effectiveDrainBytesPerSec(
  ownBytesPerSec: number,
  shared?: { readonly capacityBytesPerSec: number; readonly sharers: number },
): number {
  if (shared === undefined) return ownBytesPerSec;
  return Math.min(ownBytesPerSec, shared.capacityBytesPerSec / Math.max(1, shared.sharers));
}

/** Shared capacities (bytes/s) of drain targets and links; a missing entry means "not shared-limited". */
export interface DrainCapacities {
  readonly targets: Readonly<Record<string, number>>;
  readonly links: Readonly<Record<string, number>>;
}

/** The admission verdict for one node under simultaneous drains. */
export interface ProtectedRamVerdict {
  readonly node: string;
  readonly admitted: boolean;
  /** Nodes draining at the same time (sharing target, controller, link or power), sorted, itself included. */
  readonly drainingTogether: string[];
  readonly drainSec: number;
  /** detection + drain + persistence completion + margin. */
  readonly requiredSec: number;
  readonly usableHoldUpSec: number;
  readonly slackSec: number;
  /** What limits the drain: `own`, `target:<id>` or `link:<id>`. */
  readonly bottleneck: string;
}

/**
 * Checks detection + queued protected bytes / drain throughput + persistence completion + margin
 * < usable hold-up time for `nodeId`, assuming every node that shares its drain target, controller,
 * link or power supply drains at the same moment and splits the shared target and link. Throws
 * PolicyInputError for an unknown node or non-positive throughput.
 */
export function checkProtectedRamAdmission(
  nodes: readonly ProtectedRamNode[],
  capacities: DrainCapacities,
  nodeId: string,
): ProtectedRamVerdict {
  const node = nodes.find((n) => n.id === nodeId);
  if (!node) throw new PolicyInputError("node", `unknown protected-RAM node "${nodeId}"`);
  nodes.forEach((n, i) => {
    if (!(n.reservedDrainBytesPerSec > 0))
      throw new PolicyInputError(`nodes[${i}].reservedDrainBytesPerSec`, "must be > 0");
  });
  const together = nodes.filter(
    (n) =>
      n.drainTarget === node.drainTarget ||
      n.controller === node.controller ||
      n.link === node.link ||
      n.powerSupply === node.powerSupply,
  );
  let drainSec = node.queuedProtectedBytes / node.reservedDrainBytesPerSec;
  let bottleneck = "own";
  const shared = (
    kind: "target" | "link",
    key: string,
    cap: number | undefined,
    uses: (n: ProtectedRamNode) => boolean,
  ) => {
    if (cap === undefined) return;
    if (!(cap > 0)) throw new PolicyInputError(`capacities.${kind}s.${key}`, "must be > 0");
    const load = together.filter(uses).reduce((a, n) => a + n.queuedProtectedBytes, 0);
    const t = load / cap;
    if (t > drainSec) {
      drainSec = t;
      bottleneck = `${kind}:${key}`;
    }
  };
  shared("target", node.drainTarget, capacities.targets[node.drainTarget], (n) => n.drainTarget === node.drainTarget);
  shared("link", node.link, capacities.links[node.link], (n) => n.link === node.link);
  const requiredSec = preservationSec(node, drainSec);
  return {
    node: node.id,
    admitted: boundHolds(node, drainSec),
    drainingTogether: together.map((n) => n.id).sort(),
    drainSec,
    requiredSec,
    usableHoldUpSec: node.usableHoldUpSec,
    slackSec: node.usableHoldUpSec - requiredSec,
    bottleneck,
  };
}

/** Checks every node; the group is admissible only if all verdicts are. Deterministic order (input order). */
export function checkAllProtectedRam(
  nodes: readonly ProtectedRamNode[],
  capacities: DrainCapacities,
): ProtectedRamVerdict[] {
  return nodes.map((n) => checkProtectedRamAdmission(nodes, capacities, n.id));
}

/**
 * Throws PolicyInputError naming `capacities.targets.<id>` (or `.links.<id>`) for a drain target or
 * link that two or more nodes share but that has no capacity: their simultaneous drains would
 * otherwise be judged as if each had the whole device to itself.
 */
export function requireSharedCapacities(nodes: readonly ProtectedRamNode[], capacities: DrainCapacities): void {
  for (const [kind, key, caps] of [
    ["targets", "drainTarget", capacities.targets],
    ["links", "link", capacities.links],
  ] as const) {
    const users = new Map<string, number>();
    for (const n of nodes) users.set(n[key], (users.get(n[key]) ?? 0) + 1);
    for (const [id, count] of users) {
      if (count > 1 && caps[id] === undefined)
        throw new PolicyInputError(
          `capacities.${kind}.${id}`,
          `is shared by ${count} nodes and needs a capacity (bytes/s)`,
        );
    }
  }
}

const nonNeg = z.number().finite().nonnegative();
const name = z.string().min(1).max(256);

/** Input of `custody admit`: the protected-RAM nodes and the capacities of what they share. Unknown keys are errors. */
export const protectedRamInputSchema = z.strictObject({
  nodes: z
    .array(
      z.strictObject({
        id: name,
        queuedProtectedBytes: nonNeg,
        reservedDrainBytesPerSec: z.number().finite().positive(),
        detectionSec: nonNeg,
        persistenceCompletionSec: nonNeg,
        marginSec: nonNeg,
        usableHoldUpSec: nonNeg,
        drainTarget: name,
        controller: name,
        link: name,
        powerSupply: name,
      }),
    )
    .min(1),
  capacities: z
    .strictObject({
      targets: z.record(name, z.number().finite().positive()).default({}),
      links: z.record(name, z.number().finite().positive()).default({}),
    })
    .default({ targets: {}, links: {} }),
});

/** Parses and checks `custody admit` input; throws PolicyInputError naming the first bad path. */
export function parseProtectedRamInput(raw: unknown): { nodes: ProtectedRamNode[]; capacities: DrainCapacities } {
  const data = parseWith(protectedRamInputSchema, raw);
  const ids = new Set<string>();
  data.nodes.forEach((n, i) => {
    if (ids.has(n.id)) throw new PolicyInputError(`nodes[${i}].id`, `duplicate node id ${n.id}`);
    ids.add(n.id);
  });
  requireSharedCapacities(data.nodes, data.capacities);
  return data;
}

/**
 * What a holder's host measured about its protected RAM (the holder configuration's evidence, in
 * its units: ms and bytes/s). `sharedDrain`: a target this host drains into together with
 * `sharers - 1` others at the same moment.
 */
export interface HostProtectedRamEvidence {
  readonly protectedBytes: number;
  readonly batteryHealth: number;
  readonly holdUpMs: number;
  readonly autonomousPreservation: boolean;
  readonly drainBytesPerSec: number;
  readonly detectionMs: number;
  readonly persistenceCompletionMs: number;
  readonly marginMs: number;
  readonly measuredAt: number;
  readonly sharedDrain?: { readonly capacityBytesPerSec: number; readonly sharers: number } | undefined;
}

/** Why protected receipts are (not) allowed. `ok` is the only status that allows them. */
export const ProtectionStatus = {
  Ok: "ok",
  BoundExceeded: "bound_exceeded",
  StaleEvidence: "stale_evidence",
  BatteryDegraded: "battery_degraded",
  NoAutonomousPath: "no_autonomous_path",
  CapacityExceeded: "capacity_exceeded",
} as const;
export type ProtectionStatus = (typeof ProtectionStatus)[keyof typeof ProtectionStatus];

/** The host's evidence as the bound's terms (seconds). */
function holdUpOf(e: HostProtectedRamEvidence): HoldUpBudget {
  return {
    detectionSec: e.detectionMs / 1000,
    persistenceCompletionSec: e.persistenceCompletionMs / 1000,
    marginSec: e.marginMs / 1000,
    usableHoldUpSec: e.holdUpMs / 1000,
  };
}

/** The drain rate the host counts on: its own, or its share of a drain target it shares. */
function hostDrainRate(e: HostProtectedRamEvidence): number {
  return effectiveDrainBytesPerSec(e.drainBytesPerSec, e.sharedDrain);
}

/** Milliseconds needed to preserve `queuedBytes` after a power event (the bound's left side). */
export function preservationTimeMs(e: HostProtectedRamEvidence, queuedBytes: number): number {
  return preservationSec(holdUpOf(e), queuedBytes / hostDrainRate(e)) * 1000;
}

/**
 * Judges whether `queuedBytes` may be receipted as protected RAM at time `now`. Guarantees `ok` only
 * when every condition holds; the first failing condition is returned otherwise. Pure.
 */
export function protectionStatus(
  e: HostProtectedRamEvidence,
  queuedBytes: number,
  now: number,
  opts: { maxEvidenceAgeMs: number; minBatteryHealth: number },
): ProtectionStatus {
  const usable = evidenceUsable(e, now, opts);
  if (usable !== ProtectionStatus.Ok) return usable;
  if (queuedBytes > e.protectedBytes) return ProtectionStatus.CapacityExceeded;
  if (!boundHolds(holdUpOf(e), queuedBytes / hostDrainRate(e))) return ProtectionStatus.BoundExceeded;
  return ProtectionStatus.Ok;
}

/** The evidence conditions that do not depend on the queue: autonomous path, freshness, battery. */
function evidenceUsable(
  e: HostProtectedRamEvidence,
  now: number,
  opts: { maxEvidenceAgeMs: number; minBatteryHealth: number },
): ProtectionStatus {
  if (!e.autonomousPreservation) return ProtectionStatus.NoAutonomousPath;
  if (now - e.measuredAt > opts.maxEvidenceAgeMs) return ProtectionStatus.StaleEvidence;
  if (e.batteryHealth < opts.minBatteryHealth) return ProtectionStatus.BatteryDegraded;
  return ProtectionStatus.Ok;
}

/**
 * The largest queue (bytes) the bound admits on this host: what a holder may accept as protected
 * before it must stop issuing protected receipts. 0 when even an empty queue fails the bound.
 */
export function protectedAdmissionLimit(e: HostProtectedRamEvidence): number {
  return Math.min(e.protectedBytes, admissibleQueueBytes(holdUpOf(e), hostDrainRate(e)));
}

/**
 * Bytes of ingress credit a holder may still promise without its RAM queue outgrowing the bound:
 * the admission limit less what is queued in RAM and already promised. Infinity when the evidence
 * is unusable now (nothing is receipted as protected, so the bound limits nothing). Pure.
 */
export function protectedCreditHeadroom(
  e: HostProtectedRamEvidence,
  queuedAndPromisedBytes: number,
  now: number,
  opts: { maxEvidenceAgeMs: number; minBatteryHealth: number },
): number {
  if (evidenceUsable(e, now, opts) !== ProtectionStatus.Ok) return Infinity;
  return Math.max(0, protectedAdmissionLimit(e) - queuedAndPromisedBytes);
}

/**
 * Whether an evacuation of `bytes` at `evacuationBytesPerSec` finishes while protection still holds
 * (`holdUpRemainingMs`). False means coverage will be lost and a contract violation must be reported.
 */
export function evacuationFits(bytes: number, evacuationBytesPerSec: number, holdUpRemainingMs: number): boolean {
  if (bytes === 0) return true;
  if (evacuationBytesPerSec <= 0) return false;
  return (bytes * 1000) / evacuationBytesPerSec < holdUpRemainingMs;
}
