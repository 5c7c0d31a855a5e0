/**
 * Well-formed but semantically wrong messages, each published with the credentials of a principal
 * the server lets publish on that subject, so only the receiver's own checks can refuse them:
 * negative and huge sequence numbers, ranges up to 2^53, inverted ranges, empty and non-ASCII ids,
 * duplicate lanes, a body naming another holder, lane or volume than its subject, frontiers for
 * lanes the holder does not serve. One row per subject: every variant must be counted as refused
 * by the process it reaches, and what it aimed at must not move.
 */
import { encode } from "@msgpack/msgpack";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  encodeAdmissionRequest,
  generateHolderKeyPair,
  makeReceipt,
  makeReceiptBatch,
  privateKeyFromPkcs8,
  receiptBatchSpec,
  receiptStream,
  signReceiptBatch,
} from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import {
  admitSubject,
  creditSpec,
  creditSubject,
  encodeMessage,
  statusSubject,
  volumeStatusSpec,
  eventSubject,
  fetchSubject,
  receiptSubject,
  releaseFrontierSpec,
  releaseSubject,
  transferSubject,
  unitSubject,
  writerProgressSpec,
} from "../../transport/protocol/index.ts";
import { SENDER_HEADER, SENT_THROUGH_HEADER, SESSION_HEADER } from "../../transport/index.ts";
import type { Attack, AttackContext } from "./attack.ts";
import { figure, type NetworkState } from "./network-state.ts";

/** The largest sequence number the wire carries. */
const MAX_SEQ = Number.MAX_SAFE_INTEGER;
const FORGED_FROM = 30_000_001;

/** A hand-made envelope, past encodeMessage's checks (what a hostile peer with the right to publish sends). */
const raw = (k: string, v: number, b: Record<string, unknown>): Uint8Array => encode({ k, v, b });

/**
 * Rejections counted by `process` since `before` (sum of the counters' growth; only counters matching `counters` when
 * given), with their names.
 */
function countedAt(
  ctx: AttackContext,
  before: NetworkState,
  after: NetworkState,
  process: string,
  counters?: RegExp,
): { n: number; names: string[] } {
  const mine = ctx
    .rejections(before, after)
    .filter(
      (r) => r.startsWith(`${process}.`) && (counters === undefined || counters.test(r.slice(process.length + 1))),
    );
  return { n: mine.reduce((sum, r) => sum + Number(r.slice(r.lastIndexOf("+") + 1)), 0), names: mine };
}

/**
 * Publishes `variants` on `subject` as `as`, then waits until `process` counted at least one
 * rejection per variant (on counters matching `counters`, when given). Returns the refusal, or a note saying what was
 * missing.
 */
async function publishAndCount(
  ctx: AttackContext,
  before: NetworkState,
  o: {
    as: string;
    subject: string;
    variants: readonly Uint8Array[];
    process: string;
    headers?: Record<string, string>;
    counters?: RegExp;
  },
): Promise<{ refusal?: string; note?: string }> {
  const c = await ctx.as(o.as);
  const earlier = c.violations.length;
  for (const v of o.variants) c.transport.publish(o.subject, v, o.headers ? { headers: o.headers } : undefined);
  await c.transport.flush();
  if (c.violations.slice(earlier).some((x) => x.subject === o.subject))
    return { note: `the server denied ${o.as} on ${o.subject}: the attack proves nothing about the receiver` };
  const end = Date.now() + 10_000;
  let seen = { n: 0, names: [] as string[] };
  for (;;) {
    seen = countedAt(ctx, before, await ctx.read(), o.process, o.counters);
    if (seen.n >= o.variants.length)
      return { refusal: `${o.variants.length} variants, counted: ${seen.names.join(", ")}` };
    if (Date.now() > end)
      return {
        note:
          `only ${seen.n} of ${o.variants.length} variants counted by ${o.process}: ` +
          `${seen.names.join(", ") || "none"}`,
      };
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `<id>@<inc>/<key hex>/<failure domain>/<status>` of the log's admitted holders, read back. */
function admittedAs(
  s: NetworkState,
  holder: string,
): { incarnation: number; publicKey: Uint8Array; failureDomain: string } {
  const row = s.log.holders.find((h) => h.startsWith(`${holder}@`)) ?? `${holder}@1//x/active`;
  const [head, key, ...rest] = row.split("/");
  return {
    incarnation: Number(head!.slice(holder.length + 1)),
    publicKey: new Uint8Array(Buffer.from(key!, "hex")),
    failureDomain: rest.slice(0, -1).join("/"),
  };
}

/** The holder's current incarnation in the log. */
function incarnationOf(s: NetworkState, holder: string): number {
  return admittedAs(s, holder).incarnation;
}

/** The highest sequence the controller has as receipted by `holder` on `lane` (0: none). */
function receiptedMax(s: NetworkState, holder: string, lane: string): number {
  const runs = s.processes["controller/ctl-1"]?.samples?.[`receipted.${holder}.${lane}`] ?? [];
  return runs.length === 0 ? 0 : Math.max(...runs);
}

/** A release frontier of h-w1 for 1-5 as of `controlSeq`, with `over` changed. */
function frontierVariant(volume: string, lane: string, controlSeq: number) {
  return (over: Record<string, unknown>) =>
    raw(releaseFrontierSpec.kind, releaseFrontierSpec.version, {
      holder: "h-w1",
      volume,
      lane,
      ranges: [[1, 5]],
      epoch: 1,
      controlSeq,
      ...over,
    });
}

const releaseFrontierAttack: Attack = {
  name:
    "semantic: release frontiers from the controller's credentials (whole sequence space, inverted and " +
    "duplicate ranges, unserved and non-ASCII lanes, another holder's name, epoch 2^53-1)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const f = frontierVariant(volume, lane, before.log.lastSeq);
    const variants = [
      f({ ranges: [[1, MAX_SEQ]] }),
      f({ ranges: [[10, 5]] }),
      f({
        ranges: [
          [1, 5],
          [1, 5],
          [3, 9],
        ],
        epoch: MAX_SEQ,
        controlSeq: MAX_SEQ,
      }),
      f({ ranges: [[-5, 3]] }),
      f({ lane: "l9" }),
      f({ lane: "" }),
      f({ lane: "lä" }),
      f({ holder: "h-e1" }),
    ];
    const r = await publishAndCount(ctx, before, {
      as: "controller-ctl-1",
      subject: releaseSubject("h-w1"),
      variants,
      process: "holder/h-w1",
    });
    const after = await ctx.read();
    const key = `${volume}/${lane}`;
    const moved =
      figure(after, "holder/h-w1", `${key}.releasedMax`) > figure(before, "holder/h-w1", `${key}.retainedMax`);
    return {
      ...r,
      changed: moved ? [`h-w1 released through ${figure(after, "holder/h-w1", `${key}.releasedMax`)}`] : [],
    };
  },
};

const firstHopFrontierAttack: Attack = {
  name:
    "semantic: release frontiers of a first hop from the controller's credentials, as the writer reads them " +
    "(whole sequence space, inverted range, a holder that is not a first hop, another volume, epoch 0)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const f = frontierVariant(volume, lane, before.log.lastSeq);
    const variants = [
      f({ ranges: [[1, MAX_SEQ]] }),
      f({ ranges: [[MAX_SEQ, 1]] }),
      f({ holder: "h-zz" }),
      f({ volume: "vol-x" }),
      f({ epoch: 0, ranges: [[1, MAX_SEQ]] }),
    ];
    return publishAndCount(ctx, before, {
      as: "controller-ctl-1",
      subject: releaseSubject("h-w1"),
      variants,
      process: "writer/w1",
      counters: /^edge_release_/,
    });
  },
};

const statusDocumentAttack: Attack = {
  name:
    "semantic: status documents from the controller's credentials (a cut confirmed through 2^53-1, another " +
    "volume, an empty lane)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const scenario = (cut: unknown[]) => ({
      name: "attack",
      kind: "scenario",
      required: true,
      cut,
      lostSeqs: 0,
      lostBytes: 0,
      oldestLostAgeMs: 0,
      rtoSec: 1,
      deadlineSec: 1,
      meetsDeadline: true,
      destination: "h-w1",
      evidence: "observed",
      contributors: [],
      flags: [],
    });
    const doc = (over: Record<string, unknown>) =>
      raw(volumeStatusSpec.kind, volumeStatusSpec.version, {
        volume,
        controller: "ctl-1",
        asOfMs: Date.now(),
        controlSeq: before.log.lastSeq,
        acknowledged: [],
        survivingCut: null,
        scenarios: [scenario([[lane, MAX_SEQ]])],
        evidence: [],
        releasesCommitted: 0,
        ...over,
      });
    const variants = [doc({}), doc({ volume: "vol-x" }), doc({ scenarios: [scenario([["", 5]])] })];
    return publishAndCount(ctx, before, {
      as: "controller-ctl-1",
      subject: statusSubject(volume),
      variants,
      process: "writer/w1",
      counters: /^status_/,
    });
  },
};

const admissionRequestAttack: Attack = {
  name:
    "semantic: admission requests from a holder's credentials and key (another holder's name, incarnation " +
    "2^53-1, a non-ASCII failure domain, a key not its own)",
  async run(ctx, before) {
    const key = privateKeyFromPkcs8(readFileSync(join(ctx.net.roleDir("holder-h-e1"), "holder.key")));
    const me = admittedAs(before, "h-e1");
    const other = admittedAs(before, "h-w1");
    const req = (over: Record<string, unknown>, signer = key) =>
      encodeAdmissionRequest(
        {
          holderId: "h-e1",
          incarnation: me.incarnation + 1,
          publicKey: me.publicKey,
          failureDomain: me.failureDomain,
          at: Date.now(),
          ...over,
        },
        signer,
      );
    const variants = [
      req({ holderId: "h-w1", incarnation: other.incarnation + 1 }),
      req({ incarnation: MAX_SEQ }),
      req({ failureDomain: "zöne/ä/宿主" }),
      req({}, generateHolderKeyPair().privateKey),
    ];
    // Refused or not, a request may not change who the log admits (the runner compares the admitted holders).
    return publishAndCount(ctx, before, {
      as: "holder-h-e1",
      subject: admitSubject("h-e1"),
      variants,
      process: "controller/ctl-1",
      counters: /^admission_/,
    });
  },
};

const unitAttack: Attack = {
  name:
    "semantic: units from the writer's credentials (first above last, sequence 2^53-1, negative term, body " +
    "for another lane, volume or empty lane)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const u = (over: Record<string, unknown>) =>
      raw("unit", 1, {
        volume,
        lane,
        term: 1,
        firstSeq: FORGED_FROM,
        lastSeq: FORGED_FROM + 1,
        commitTs: [1, 2],
        payload: new Uint8Array(64).fill(3),
        digest: new Uint8Array(32),
        ...over,
      });
    const variants = [
      u({ firstSeq: FORGED_FROM + 5, lastSeq: FORGED_FROM }),
      u({ firstSeq: MAX_SEQ - 1, lastSeq: MAX_SEQ }),
      u({ term: -1 }),
      u({ lane: "l9" }),
      u({ volume: "vol-x" }),
      u({ lane: "" }),
    ];
    const headers = {
      [SENDER_HEADER]: "w1",
      [SESSION_HEADER]: "1",
      [SENT_THROUGH_HEADER]: String(FORGED_FROM + 1),
    };
    const r = await publishAndCount(ctx, before, {
      as: "writer-w1",
      subject: unitSubject("h-e1", volume, lane),
      variants,
      process: "holder/h-e1",
      headers,
    });
    const after = await ctx.read();
    const took = figure(after, "holder/h-e1", `${volume}/${lane}.retainedMax`) >= FORGED_FROM;
    return { ...r, changed: took ? ["h-e1 retains forged sequences"] : [] };
  },
};

const creditGrantAttack: Attack = {
  name:
    "semantic: credit grants from a holder's credentials (another holder, lane or volume in the body than " +
    "the subject, an unadmitted incarnation 2^53-1)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const g = (over: Record<string, unknown>) =>
      encodeMessage(creditSpec, {
        holder: "h-e1",
        sender: "w1",
        volume,
        lane,
        incarnation: incarnationOf(before, "h-e1"),
        session: 1,
        window: 1,
        grantedThrough: 1 << 30,
        grantSeq: 1,
        ...over,
      });
    const variants = [
      g({ holder: "h-w1" }),
      g({ lane: "l9" }),
      g({ volume: "vol-x" }),
      g({ incarnation: MAX_SEQ, grantedThrough: MAX_SEQ }),
    ];
    // A believed made-up incarnation would leave every real grant stale: the writer would stop sending to h-e1 (the
    // runner's serving check).
    return publishAndCount(ctx, before, {
      as: "holder-h-e1",
      subject: creditSubject("h-e1", volume, lane),
      variants,
      process: "writer/w1",
      counters: /^credit_/,
    });
  },
};

const receiptBatchAttack: Attack = {
  name:
    "semantic: receipt batches signed with the holder's own key (bound to another lane, incarnation 2^53-1 " +
    "or 0, epoch 2^53-1, ranges to 2^53-1 in a stale epoch)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const key = privateKeyFromPkcs8(readFileSync(join(ctx.net.roleDir("holder-h-e1"), "holder.key")));
    const inc = incarnationOf(before, "h-e1");
    const batch = (o: { incarnation?: number; epoch?: number; boundLane?: string; retained?: RangeSet }) => {
      const holder = { holderId: "h-e1", incarnation: o.incarnation ?? inc };
      const r = makeReceipt({
        holder,
        volume,
        lane: o.boundLane ?? lane,
        issuedAt: Date.now(),
        writerTerm: 1,
        topologyEpoch: o.epoch ?? 1,
        policyGeneration: 1,
        prefixBase: 1,
        payload: { representation: "raw", manifest: { baseSnapshots: [], consistencyCuts: [] } },
        obligation: {
          obligationId: `${volume}-${lane}`,
          releaseAuthority: { kind: "control_log", region: ctx.net.controlRegion },
        },
        extensions: [],
        receiptSeq: 900_000_000,
        retained: o.retained ?? RangeSet.of(1, 10),
        residency: { kind: "ram", capabilityGeneration: 0, observedAt: Date.now() },
      });
      // The stream says l0's subject whatever lane it names: only the lane gives a misbound batch away.
      const stream = { ...receiptStream(volume, o.boundLane ?? lane), subject: receiptSubject(volume, lane) };
      const signed = signReceiptBatch(makeReceiptBatch(stream, holder, Date.now(), [r]), key);
      return encodeMessage(receiptBatchSpec, { body: signed.body, signature: signed.signature });
    };
    const variants = [
      batch({ boundLane: "l1" }),
      batch({ incarnation: MAX_SEQ }),
      batch({ epoch: MAX_SEQ }),
      batch({ incarnation: 0 }),
      batch({ epoch: 0, retained: RangeSet.of(1, MAX_SEQ) }),
    ];
    const r = await publishAndCount(ctx, before, {
      as: "holder-h-e1",
      subject: receiptSubject(volume, lane),
      variants,
      process: "controller/ctl-1",
      counters: /^receipt_/,
    });
    const after = await ctx.read();
    const claimed = receiptedMax(after, "h-e1", lane);
    return {
      ...r,
      changed:
        claimed > Math.max(receiptedMax(before, "h-e1", lane), figure(after, "writer/w1", "head"))
          ? [`the controller has h-e1 holding through ${claimed}`]
          : [],
    };
  },
};

const writerProgressAttack: Attack = {
  name:
    "semantic: writer progress from the writer's credentials (a lane twice, a lane the volume lacks, a run " +
    "past its head, another volume)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const p = (lanes: unknown[], over: Record<string, unknown> = {}) =>
      raw(writerProgressSpec.kind, writerProgressSpec.version, {
        writer: "w1",
        volume,
        term: 1,
        lanes,
        at: Date.now(),
        ...over,
      });
    const l = (name: string, head: number, runs: number[][] = []) => ({ lane: name, head, runs });
    const variants = [
      p([l(lane, 1), l(lane, MAX_SEQ)]),
      p([l(lane, 1), l("l9", MAX_SEQ)]),
      p([l(lane, 5, [[MAX_SEQ - 1, MAX_SEQ, Date.now(), 512]])]),
      p([l(lane, MAX_SEQ)], { volume: "vol-x" }),
      p([l(lane, 5, [[9, 3, Date.now(), 512]])]),
    ];
    const r = await publishAndCount(ctx, before, {
      as: "writer-w1",
      subject: eventSubject(volume),
      variants,
      process: "controller/ctl-1",
    });
    const after = await ctx.read();
    const head = figure(after, "controller/ctl-1", "writerHeadMax");
    return {
      ...r,
      changed: head >= MAX_SEQ - 1 ? [`the controller believes the writer wrote through ${head}`] : [],
    };
  },
};

const fetchRequestAttack: Attack = {
  name:
    "semantic: fetch requests from the operator's credentials (inverted ranges, an unserved lane, another " +
    "holder's name, an empty lane)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const q = (over: Record<string, unknown>) =>
      raw("unit-fetch", 1, { holder: "h-w1", volume, lane, ranges: [[1, 4]], after: -1, limit: 16, ...over });
    const variants = [
      q({
        ranges: [
          [1, 4],
          [MAX_SEQ, 7],
        ],
      }),
      q({ lane: "l9", ranges: [[1, MAX_SEQ]] }),
      q({ holder: "h-e1" }),
      q({ lane: "" }),
      q({ after: -MAX_SEQ }),
    ];
    return publishAndCount(ctx, before, {
      as: "operator",
      subject: fetchSubject("h-w1", volume),
      variants,
      process: "holder/h-w1",
    });
  },
};

const transferOfferAttack: Attack = {
  name:
    "semantic: custody transfer offers from a holder's credentials (naming another origin or target, an " +
    "unserved lane, offer id 2^53-1, a unit of another lane)",
  async run(ctx, before) {
    const { volume, lane } = ctx.net;
    const unit = (l: string) =>
      encode({
        k: "unit",
        v: 1,
        b: {
          volume,
          lane: l,
          term: 1,
          firstSeq: FORGED_FROM + 100,
          lastSeq: FORGED_FROM + 100,
          commitTs: [1],
          payload: new Uint8Array(16),
          digest: new Uint8Array(32),
        },
      });
    const o = (over: Record<string, unknown>) =>
      raw("transfer-offer", 1, {
        from: "h-e1",
        to: "h-w1",
        volume,
        lane,
        offerId: 1,
        units: [unit(lane)],
        ...over,
      });
    const variants = [
      o({ from: "h-w1" }),
      o({ to: "h-e1" }),
      o({ lane: "l9", units: [unit("l9")] }),
      o({ offerId: MAX_SEQ, units: [unit("l9")] }),
      o({ units: [] }),
    ];
    const r = await publishAndCount(ctx, before, {
      as: "holder-h-e1",
      subject: transferSubject("h-w1"),
      variants,
      process: "holder/h-w1",
    });
    const after = await ctx.read();
    const took = figure(after, "holder/h-w1", `${volume}/${lane}.retainedMax`) >= FORGED_FROM;
    return { ...r, changed: took ? ["h-w1 took custody of forged units"] : [] };
  },
};

/** The semantic attacks, in the order they run. */
export function semanticAttacks(): Attack[] {
  return [
    releaseFrontierAttack,
    firstHopFrontierAttack,
    statusDocumentAttack,
    admissionRequestAttack,
    unitAttack,
    creditGrantAttack,
    receiptBatchAttack,
    writerProgressAttack,
    fetchRequestAttack,
    transferOfferAttack,
  ];
}
