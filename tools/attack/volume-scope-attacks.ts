/**
 * Control rights per volume (issue #46). One control log serves both volumes of the attack
 * network, and NATS lets each controller append to it. With only ctl-2's NATS credentials and
 * signing key (ctl-2 is vol-b's controller), control events on vol-a are appended straight to the
 * stream, past the committer's own scope check, as modified code would. Every reader must skip each
 * one and nothing may change; a controller may also not move its own volume's custody to a holder
 * of another volume.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ControlConflictError,
  ControlLogFollower,
  foldControlEntry,
  INITIAL_CONTROL_STATE,
  privateKeyFromPkcs8,
  type ControlEventBody,
  type ControlSigner,
  type ControlState,
} from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { readPublicKeyHex } from "../../actors/runtime/index.ts";
import { openJetStreamControlLog } from "../../transport/index.ts";
import type { Attack, AttackContext } from "./attack.ts";
import type { AttackerConnection } from "./principal.ts";
import type { SecuredNetwork } from "./secured-network.ts";

/** One event tried: what the readers' fold made of it. */
export interface ScopedTry {
  readonly label: string;
  readonly seq: number;
  /** The refusal the fold recorded for it, undefined when it applied. */
  readonly code: string | undefined;
  /** What of the folded state it changed besides the record of refusals and the head. */
  readonly changed: readonly string[];
}

/** Events to try, built from the log as it is when each is appended. */
export type ScopedEvents = readonly (readonly [label: string, body: (s: ControlState) => ControlEventBody])[];

/** vol-a's obligation in the attack network. */
export const VOL_A_OBLIGATION = "vol-a-l0";

/**
 * Ten sequences at the start of what `holder` is responsible for now on vol-a (so the event would otherwise be
 * plausible).
 */
function tenOf(s: ControlState, holder: string): RangeSet {
  const first = s.obligations[VOL_A_OBLIGATION]?.responsible[holder]?.toJSON().at(-1)?.[0] ?? 1;
  return RangeSet.of(first, first + 9);
}

/**
 * The finding, step by step: release h-w1 relying on h-e1, move h-e1's custody to vol-b's h-e2, release h-e1 relying on
 * h-e2.
 */
export function findingEvents(transferId: string): ScopedEvents {
  return [
    [
      "release_ranges h-w1 reliesOn h-e1",
      (s) => ({
        type: "release_ranges",
        obligationId: VOL_A_OBLIGATION,
        holderId: "h-w1",
        ranges: tenOf(s, "h-w1"),
        reliesOn: ["h-e1"],
      }),
    ],
    [
      "prepare_transfer h-e1 → h-e2",
      (s) => ({
        type: "prepare_transfer",
        transferId,
        obligationId: VOL_A_OBLIGATION,
        fromHolder: "h-e1",
        toHolder: "h-e2",
        ranges: tenOf(s, "h-e1"),
      }),
    ],
    ["activate_replacement", () => ({ type: "activate_replacement", transferId })],
    [
      "release_ranges h-e1 reliesOn h-e2",
      (s) => ({
        type: "release_ranges",
        obligationId: VOL_A_OBLIGATION,
        holderId: "h-e1",
        ranges: tenOf(s, "h-e1"),
        reliesOn: ["h-e2"],
      }),
    ],
  ];
}

const holderIn = (s: ControlState, id: string) => s.holders[id]!;

/** Events that set up custody on vol-a: an obligation, and holder admissions that would bind holders to it. */
function admissionEvents(tag: string): ScopedEvents {
  return [
    [
      "create_obligation vol-a/l9",
      () => ({
        type: "create_obligation",
        obligationId: `vol-a-l9-${tag}`,
        volume: "vol-a",
        lane: "l9",
        representation: "raw",
        holders: ["h-w1"],
        fromSeq: 1,
      }),
    ],
    [
      "admit_holder h-w1, next incarnation, same key (fences the running one)",
      (s) => ({
        type: "admit_holder",
        holderId: "h-w1",
        incarnation: holderIn(s, "h-w1").incarnation + 1,
        publicKey: holderIn(s, "h-w1").publicKey,
        failureDomain: holderIn(s, "h-w1").failureDomain,
      }),
    ],
    [
      "admit_holder h-e2 bound to vol-a too",
      (s) => ({
        type: "admit_holder",
        holderId: "h-e2",
        incarnation: holderIn(s, "h-e2").incarnation + 1,
        publicKey: holderIn(s, "h-e2").publicKey,
        failureDomain: holderIn(s, "h-e2").failureDomain,
        volumes: ["vol-a", "vol-b"],
      }),
    ],
  ];
}

/** Events that end custody on vol-a: a release to a base, a holder's retirement, a declared failure. */
function custodyEndingEvents(tag: string): ScopedEvents {
  return [
    [
      "release_to_base h-e1 on a base at h-w1",
      (s) => ({
        type: "release_to_base",
        obligationId: VOL_A_OBLIGATION,
        holderId: "h-e1",
        ranges: tenOf(s, "h-e1"),
        baseHolder: "h-w1",
        snapshotId: `snap-${tag}`,
        baseThroughSeq: Number.MAX_SAFE_INTEGER - 1,
      }),
    ],
    [
      "retire_holder h-e1",
      (s) => ({ type: "retire_holder", holderId: "h-e1", incarnation: holderIn(s, "h-e1").incarnation }),
    ],
    [
      "declare_failure h-w1",
      (s) => ({
        type: "declare_failure",
        scope: "holder",
        domain: holderIn(s, "h-w1").failureDomain,
        holderIds: ["h-w1"],
      }),
    ],
  ];
}

/** Events on vol-a's lanes and fences: the shared policy fence, holds, a failover, persistence targets. */
function laneControlEvents(tag: string, s0: ControlState): ScopedEvents {
  const hold = Object.values(s0.holds).find((h) => h.volume === "vol-a");
  return [
    [
      "policy_change (the shared fence)",
      (s) => ({
        type: "policy_change",
        topologyEpoch: s.topologyEpoch + 1,
        policyGeneration: s.policyGeneration,
        reason: `scope attack ${tag}`,
      }),
    ],
    [
      "hold_ranges on vol-a",
      (s) => ({
        type: "hold_ranges",
        holdId: `hold-${tag}`,
        kind: "pitr_pin",
        volume: "vol-a",
        lane: "l0",
        ranges: tenOf(s, "h-w1"),
        holders: [],
        untilMs: 0,
        by: "ctl-2",
      }),
    ],
    ...(hold !== undefined
      ? [
          [
            `end_hold ${hold.holdId}`,
            (): ControlEventBody => ({ type: "end_hold", holdId: hold.holdId, reason: "ctl-2" }),
          ] as const,
        ]
      : []),
    [
      "commit_failover vol-a/l0",
      () => ({
        type: "commit_failover",
        volume: "vol-a",
        lane: "l0",
        term: 1_000,
        recoveredCut: 1,
        oldHead: 1,
        firstSeq: 2,
      }),
    ],
    [
      "choose_persistence vol-a/l0",
      () => ({ type: "choose_persistence", volume: "vol-a", lane: "l0", fromSeq: 1, targets: ["h-e1"], scenarios: [] }),
    ],
  ];
}

/** Every other event type a controller signs, each aimed at vol-a (`end_hold` only when vol-a has a hold in `s0`). */
export function otherVolumeEvents(tag: string, s0: ControlState): ScopedEvents {
  return [...admissionEvents(tag), ...custodyEndingEvents(tag), ...laneControlEvents(tag, s0)];
}

const essentials = ({ rejected: _r, lastSeq: _l, lastEntryHash: _e, headHash: _h, ...rest }: ControlState) => rest;

/** The parts of `b` that differ from `a`, by top-level key. */
function stateDiff(a: ControlState, b: ControlState): string[] {
  const x = essentials(a) as Record<string, unknown>;
  const y = essentials(b) as Record<string, unknown>;
  const json = (v: unknown) =>
    JSON.stringify(v, (_k, w: unknown) =>
      w instanceof Uint8Array ? Buffer.from(w).toString("hex") : w instanceof RangeSet ? w.toJSON() : w,
    );
  return [...new Set([...Object.keys(x), ...Object.keys(y)])].filter((k) => json(x[k]) !== json(y[k]));
}

/**
 * Appends each event as controller `instance` (its NATS connection `conn`, its signing key from the
 * deployment's files) straight to the control stream, each prepared on the head then (a commit by
 * the real controller in between is a conflict: prepared again). Then folds the log as every role
 * does (trusting the operator key `custody init` wrote) and reports, per event, the refusal and
 * what it changed: the state just before its entry against the state just after it.
 */
export async function appendAsController(
  net: SecuredNetwork,
  conn: AttackerConnection,
  instance: string,
  events: ScopedEvents | ((s: ControlState) => ScopedEvents),
): Promise<ScopedTry[]> {
  const dir = net.roleDir(instance);
  const trust = { operators: { operator: readPublicKeyHex(join(dir, "operator.pub")) } };
  const signer: ControlSigner = {
    id: instance.replace(/^controller-/, ""),
    privateKey: privateKeyFromPkcs8(readFileSync(join(dir, "signing.key"))),
  };
  const store = await openJetStreamControlLog(conn.transport.connection, { region: net.controlRegion });
  try {
    const follower = new ControlLogFollower(store, undefined, trust);
    const appended: { label: string; seq: number }[] = [];
    const list = typeof events === "function" ? events(await follower.refresh()) : events;
    for (const [label, body] of list) {
      for (let attempt = 1; ; attempt++) {
        const s = await follower.refresh();
        const event = {
          region: net.controlRegion,
          controller: signer.id,
          preparedEpoch: s.topologyEpoch,
          preparedGeneration: s.policyGeneration,
          prevHash: s.headHash,
          issuedAt: Date.now(),
          ...body(s),
        };
        try {
          appended.push({ label, seq: await store.append(event, s.lastSeq, signer) });
          break;
        } catch (err) {
          if (!(err instanceof ControlConflictError) || attempt >= 20) throw err;
        }
      }
    }
    // The roles' fold, entry by entry, to judge each appended entry on its own.
    const records = await store.readRecordsFrom(1);
    let s: ControlState = INITIAL_CONTROL_STATE;
    const out: ScopedTry[] = [];
    for (const r of records) {
      const next = foldControlEntry(s, r, trust);
      const mine = appended.find((a) => a.seq === r.seq);
      if (mine !== undefined)
        out.push({
          label: mine.label,
          seq: r.seq,
          code: next.rejected.find((x) => x.seq === r.seq)?.code,
          changed: stateDiff(s, next),
        });
      s = next;
    }
    return out;
  } finally {
    await store.close();
  }
}

/** Refused when every try got its expected code and changed nothing; else what got through. */
function judge(
  tries: readonly ScopedTry[],
  expected: (t: ScopedTry) => string,
): { refusal?: string; changed: string[] } {
  const through = tries.filter((t) => t.code !== expected(t) || t.changed.length > 0);
  const changed = tries.filter((t) => t.changed.length > 0).map((t) => `${t.label} changed ${t.changed.join(", ")}`);
  if (through.length > 0)
    return {
      changed: [
        ...changed,
        ...through.filter((t) => t.changed.length === 0).map((t) => `${t.label}: ${t.code ?? "applied"}`),
      ],
    };
  return { refusal: `fold skipped each: ${tries.map((t) => `${t.label} → ${t.code}`).join("; ")}`, changed };
}

/** The activation of a transfer whose prepare was skipped names no transfer: the fold refuses it as unknown. */
const findingCode = (t: ScopedTry) =>
  t.label === "activate_replacement" ? "unknown_transfer" : "not_authorized_for_volume";

/** The attacks on control rights per volume, in the order they run. */
export function volumeScopeAttacks(): Attack[] {
  const tag = () => Date.now().toString(36);
  return [
    {
      name: "vol-b's controller (ctl-2) credentials and key: release vol-a's custody relying on a vol-b holder",
      async run(ctx: AttackContext) {
        const tries = await appendAsController(
          ctx.net,
          await ctx.as("controller-ctl-2"),
          "controller-ctl-2",
          findingEvents(`scope-${tag()}`),
        );
        return judge(tries, findingCode);
      },
    },
    {
      name: "vol-b's controller (ctl-2) credentials and key: every other control event on vol-a",
      async run(ctx: AttackContext) {
        const t = tag();
        const tries = await appendAsController(ctx.net, await ctx.as("controller-ctl-2"), "controller-ctl-2", (s0) =>
          otherVolumeEvents(t, s0),
        );
        return judge(tries, () => "not_authorized_for_volume");
      },
    },
    {
      name: "vol-a's controller (ctl-1) moves vol-a's custody to vol-b's holder",
      async run(ctx: AttackContext) {
        const id = `scope-${tag()}`;
        const events: ScopedEvents = [
          [
            "prepare_transfer h-e1 → h-e2",
            (s) => ({
              type: "prepare_transfer",
              transferId: id,
              obligationId: VOL_A_OBLIGATION,
              fromHolder: "h-e1",
              toHolder: "h-e2",
              ranges: tenOf(s, "h-e1"),
            }),
          ],
          [
            "release_ranges h-e1 reliesOn h-e2",
            (s) => ({
              type: "release_ranges",
              obligationId: VOL_A_OBLIGATION,
              holderId: "h-e1",
              ranges: tenOf(s, "h-e1"),
              reliesOn: ["h-e2"],
            }),
          ],
        ];
        const tries = await appendAsController(ctx.net, await ctx.as("controller-ctl-1"), "controller-ctl-1", events);
        return judge(tries, () => "holder_not_bound_to_volume");
      },
    },
  ];
}
