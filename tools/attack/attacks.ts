/**
 * The attacks, each as someone on the network would try it: with no credentials, with a CA it
 * should not trust, or with one principal's stolen credentials doing what that principal may not.
 * Each attack returns the refusal it saw (a permission violation the server reported, an error,
 * or a typed rejection counted by an actor or by the control log's fold); the runner judges the
 * state and whether every actor still serves.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { releaseFrontierSpec } from "../../transport/protocol/index.ts";
import { systemClock } from "../../core/index.ts";
import { commitControlEvent } from "../../custody/index.ts";
import { ControlLogFollower } from "../../custody/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { makeTransportUnit } from "../../lanes/index.ts";
import { connectNats, closeNats } from "../../transport/index.ts";
import { controlStreamName, openJetStreamControlLog } from "../../transport/index.ts";
import {
  admitSubject,
  creditSubject,
  ctrlSubject,
  eventSubject,
  fetchSubject,
  receiptSubject,
  releaseSubject,
  statusSubject,
  transferSubject,
  unitSubject,
} from "../../transport/protocol/index.ts";
import { SENDER_HEADER, SENT_THROUGH_HEADER, SESSION_HEADER } from "../../transport/index.ts";
import { creditSpec, encodeMessage, unitSpec } from "../../transport/protocol/index.ts";
import { readPublicKeyHex } from "../../actors/runtime/index.ts";
import { decodeBombs } from "./decode-bombs.ts";
import { unitAuthAttacks } from "./unit-attacks.ts";
import { controlLogJunkAttacks } from "./control-log-attacks.ts";
import { volumeScopeAttacks } from "./volume-scope-attacks.ts";
import { jetStreamAttacks } from "./jetstream-attacks.ts";
import { scopeAttacks } from "./scope-attacks.ts";
import { incarnationAttacks } from "./incarnation-attacks.ts";
import { semanticAttacks } from "./semantic-attacks.ts";
import type { AttackerConnection } from "./principal.ts";
import type { Attack, AttackContext } from "./attack.ts";
import { forgedReceiptBatch } from "./forged-receipt.ts";
import type { NetworkState } from "./network-state.ts";
import type { SecuredNetwork } from "./secured-network.ts";

const FORGED_FROM = 10_000_001;
const LANE_KEY = (net: SecuredNetwork) => `${net.volume}/${net.lane}`;
/** Bombs are as large as a NATS message may be (1 MiB max_payload), less room for the protocol and headers. */
const BOMB_BYTES = (1 << 20) - 4096;

/** Waits (at most `ms`) for the server to refuse `subject` to `c`; returns the violation or undefined. */
async function violation(
  c: AttackerConnection,
  subject: string,
  operation: "publish" | "subscription" = "publish",
  ms = 5_000,
): Promise<string | undefined> {
  await c.transport.flush().catch(() => undefined);
  const end = Date.now() + ms;
  for (;;) {
    const v = c.violations.find((x) => x.subject === subject && x.operation === operation);
    if (v !== undefined) return `server: ${operation} on ${subject} denied`;
    if (Date.now() > end) return undefined;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits (at most `ms`) until `check` gives a string; undefined if it never does. */
async function eventually(ms: number, check: () => Promise<string | undefined>): Promise<string | undefined> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Waits for an actor's counted rejection since `before`. */
async function counted(
  ctx: AttackContext,
  before: NetworkState,
  filter: (name: string) => boolean = () => true,
  ms = 8_000,
): Promise<string | undefined> {
  const r = await eventually(ms, async () => {
    const r = ctx.rejections(before, await ctx.read()).filter(filter);
    return r.length > 0 ? `counted: ${r.join(", ")}` : undefined;
  });
  if (r === undefined && process.env["ATTACK_DEBUG"]) {
    const counters = Object.entries((await ctx.read()).processes).map(([k, p]) => [k, p.counters]);
    process.stderr.write(`debug: processes ${JSON.stringify(Object.fromEntries(counters))}\n`);
  }
  return r;
}

/** Connecting at all: without credentials, or without trusting the deployment's CA. */
const connectionAttacks: Attack[] = [
  {
    name: "anonymous connection",
    async run({ net }) {
      const caFile = join(net.out, "operator", "ca.pem");
      try {
        await closeNats(
          await connectNats({ servers: net.urls["east"]!, name: "anonymous", caFile, maxReconnectAttempts: 0 }),
        );
        return {};
      } catch (err) {
        return { refusal: `connect refused: ${(err as Error).message}` };
      }
    },
  },
  {
    name: "client not trusting the deployment's CA",
    async run({ net }) {
      const other = readOperatorSeed(net);
      try {
        // The operator's own seed, but the system's CAs instead of the deployment's: TLS must fail.
        await closeNats(
          await connectNats({
            servers: net.urls["east"]!,
            name: "untrusting",
            nkeySeed: other,
            tls: {},
            maxReconnectAttempts: 0,
          } as never),
        );
        return {};
      } catch (err) {
        return { refusal: `TLS refused: ${(err as Error).message}` };
      }
    },
  },
];

/** Traffic only another role may send: a release frontier from a holder, units in the writer's name. */
const forgedTrafficAttacks: Attack[] = [
  {
    name: "forged release frontier from a holder's credentials",
    async run(ctx, before) {
      const c = await ctx.as("holder-h-e1");
      const subject = releaseSubject("h-w1");
      c.transport.publish(
        subject,
        encodeMessage(releaseFrontierSpec, {
          holder: "h-w1",
          volume: ctx.net.volume,
          lane: ctx.net.lane,
          ranges: [[1, 1_000_000]],
          epoch: 1,
          controlSeq: before.log.lastSeq,
        }),
      );
      const refusal = await violation(c, subject);
      const after = await ctx.read();
      const released = after.processes["holder/h-w1"]?.figures[`${LANE_KEY(ctx.net)}.releasedMax`] ?? 0;
      return { ...(refusal ? { refusal } : {}), changed: released > 0 ? [`h-w1 released through ${released}`] : [] };
    },
  },
  {
    name: "units with a spoofed Custody-Sender from non-writer credentials",
    async run(ctx) {
      const unit = makeTransportUnit({
        volume: ctx.net.volume,
        lane: ctx.net.lane,
        term: 1,
        firstSeq: FORGED_FROM,
        lastSeq: FORGED_FROM + 4,
        commitTs: [1, 2, 3, 4, 5],
        payload: new Uint8Array(64),
      });
      const headers = {
        [SENDER_HEADER]: "w1",
        [SESSION_HEADER]: "1",
        [SENT_THROUGH_HEADER]: String(FORGED_FROM + 4),
      };
      const subject = unitSubject("h-w1", ctx.net.volume, ctx.net.lane);
      const refusals: string[] = [];
      for (const who of ["holder-h-e1", "controller-ctl-1", "operator"]) {
        const c = await ctx.as(who);
        c.transport.publish(subject, encodeMessage(unitSpec, unit), { headers });
        const r = await violation(c, subject);
        if (r === undefined) return {};
        refusals.push(`${who}: ${r}`);
      }
      const after = await ctx.read();
      const forged = Object.entries(after.processes).filter(
        ([k, p]) => k.startsWith("holder/") && (p.figures[`${LANE_KEY(ctx.net)}.retainedMax`] ?? 0) >= FORGED_FROM,
      );
      return { refusal: refusals.join("; "), changed: forged.map(([k]) => `${k} retains forged sequences`) };
    },
  },
];

/** A holder's credentials speaking for another holder, or on a lane it does not serve. */
const holderForgeryAttacks: Attack[] = [
  {
    name: "credit grant as another holder",
    async run(ctx) {
      const c = await ctx.as("holder-h-w1", "west");
      const subject = creditSubject("h-e1", ctx.net.volume, ctx.net.lane);
      c.transport.publish(
        subject,
        encodeMessage(creditSpec, {
          holder: "h-e1",
          sender: "w1",
          volume: ctx.net.volume,
          lane: ctx.net.lane,
          incarnation: 2,
          session: 1,
          window: 99,
          grantedThrough: 1 << 30,
          grantSeq: 1,
        }),
      );
      const refusal = await violation(c, subject);
      return refusal ? { refusal } : {};
    },
  },
  {
    name: "receipt batch signed by one holder in another's name",
    async run(ctx, before) {
      const c = await ctx.as("holder-h-e1");
      const forged = forgedReceiptBatch(
        ctx.net,
        "h-w1",
        RangeSet.of(1, 50_000_000),
        join(ctx.net.roleDir("holder-h-e1"), "holder.key"),
      );
      c.transport.publish(receiptSubject(ctx.net.volume, ctx.net.lane), forged);
      const refusal = await counted(ctx, before, (n) => n.includes("signature"));
      return refusal ? { refusal } : {};
    },
  },
  {
    name: "receipts on a lane the holder does not serve",
    async run(ctx) {
      const c = await ctx.as("holder-h-e1");
      const subject = receiptSubject(ctx.net.volume, "l9");
      c.transport.publish(subject, new Uint8Array([0x80]));
      const refusal = await violation(c, subject);
      return refusal ? { refusal } : {};
    },
  },
];

/** The control stream itself: appends, deletes and purges by principals that may not. */
const controlStreamAttacks: Attack[] = [
  {
    name: "appends to the control stream from holder and writer credentials",
    async run(ctx, before) {
      const subject = ctrlSubject(ctx.net.controlRegion);
      const refusals: string[] = [];
      for (const who of ["holder-h-e1", "writer-w1"]) {
        const c = await ctx.as(who);
        c.transport.publish(subject, new TextEncoder().encode("garbage"));
        const r = await violation(c, subject);
        if (r === undefined) return {};
        refusals.push(`${who}: ${r}`);
      }
      const after = await ctx.read();
      const skipped = after.log.rejected.length - before.log.rejected.length;
      return { refusal: refusals.join("; "), changed: skipped > 0 ? [`${skipped} entries appended`] : [] };
    },
  },
  {
    name: "control stream delete and purge by a non-operator",
    async run(ctx, before) {
      const c = await ctx.as("holder-h-e1");
      const stream = controlStreamName(ctx.net.controlRegion);
      const jsm = await jetstreamManager(c.transport.connection, { timeout: 2_000 });
      const outcomes: string[] = [];
      for (const [op, call] of [
        ["DELETE", () => jsm.streams.delete(stream)],
        ["PURGE", () => jsm.streams.purge(stream)],
      ] as const) {
        try {
          await call();
          return {};
        } catch {
          const r = await violation(c, `$JS.API.STREAM.${op}.${stream}`);
          if (r === undefined) return {};
          outcomes.push(r);
        }
      }
      const after = await ctx.read();
      return {
        refusal: outcomes.join("; "),
        changed: after.log.lastSeq < before.log.lastSeq ? ["the log lost entries"] : [],
      };
    },
  },
];

/** Reading others' inboxes, and replaying what was captured (a log entry, a receipt batch). */
const eavesdropAndReplayAttacks: Attack[] = [
  {
    name: "inbox injection and inbox eavesdropping",
    async run(ctx) {
      const c = await ctx.as("holder-h-e1");
      c.transport.publish("_INBOX.controller.ctl-1.x", new Uint8Array(1));
      const pub = await violation(c, "_INBOX.controller.ctl-1.x");
      c.transport.subscribe("_INBOX.controller.>", () => undefined);
      const sub = await violation(c, "_INBOX.controller.>", "subscription");
      return pub && sub ? { refusal: `${pub}; ${sub}` } : {};
    },
  },
  {
    name: "replay of a captured signed control-log entry",
    async run(ctx, before) {
      // The operator may append (commitRegions), so the replay lands; the fold must skip it.
      const c = await ctx.as("operator");
      const stream = controlStreamName(ctx.net.controlRegion);
      const jsm = await jetstreamManager(c.transport.connection, { timeout: 5_000 });
      const first = await jsm.streams.getMessage(stream, { seq: 2 });
      await jetstream(c.transport.connection, { timeout: 5_000 }).publish(
        ctrlSubject(ctx.net.controlRegion),
        first!.data,
      );
      const refusal = await eventually(8_000, async () => {
        const after = await ctx.read();
        const codes = after.log.rejected.slice(before.log.rejected.length);
        return codes.length > 0 ? `fold skipped it: ${codes.join(", ")}` : undefined;
      });
      return refusal ? { refusal } : {};
    },
  },
  {
    name: "replay of an old receipt batch",
    async run(ctx) {
      const c = await ctx.as("holder-h-e1");
      const captured = await new Promise<Uint8Array>((resolve) => {
        const sub = c.transport.subscribe(receiptSubject(ctx.net.volume, ctx.net.lane), (m: { data: Uint8Array }) => {
          sub.unsubscribe();
          resolve(new Uint8Array(m.data));
        });
      });
      await new Promise((r) => setTimeout(r, 1_500)); // newer batches supersede it meanwhile
      const mid = await ctx.read();
      c.transport.publish(receiptSubject(ctx.net.volume, ctx.net.lane), captured);
      const refusal = await counted(ctx, mid, (n) => /superseded|duplicate/.test(n));
      return refusal ? { refusal } : {};
    },
  },
];

/** A commit with the operator's NATS credentials but without its signing key. */
const unsignedCommitAttacks: Attack[] = [
  {
    name: "unsigned control event committed with the operator's NATS credentials, without its key",
    async run(ctx, before) {
      const c = await ctx.as("operator");
      const store = await openJetStreamControlLog(c.transport.connection, { region: ctx.net.controlRegion });
      try {
        // Folded as the roles fold it (trusting the operator key), so the commit is prepared on the real head.
        const follower = new ControlLogFollower(store, undefined, {
          operators: { operator: readPublicKeyHex(join(ctx.net.out, "operator", "operator.pub")) },
        });
        await commitControlEvent(store, follower, { controller: "operator", clock: systemClock }, () => ({
          type: "admit_holder",
          holderId: "h-e1",
          incarnation: 99,
          publicKey: new Uint8Array(32).fill(7),
          failureDomain: "east/evil/evil",
        }));
      } catch (err) {
        return { refusal: `commit refused: ${(err as Error).message}` };
      } finally {
        await store.close();
      }
      const refusal = await eventually(8_000, async () => {
        const codes = (await ctx.read()).log.rejected.slice(before.log.rejected.length);
        return codes.length > 0 ? `fold skipped it: ${codes.join(", ")}` : undefined;
      });
      return refusal ? { refusal } : {};
    },
  },
];

/** Every attack, in the order they run. */
export function attacks(): Attack[] {
  return [
    ...connectionAttacks,
    ...forgedTrafficAttacks,
    ...unitAuthAttacks(),
    ...holderForgeryAttacks,
    ...controlStreamAttacks,
    ...eavesdropAndReplayAttacks,
    ...unsignedCommitAttacks,
    ...controlLogJunkAttacks(),
    ...incarnationAttacks(),
    ...volumeScopeAttacks(),
    ...jetStreamAttacks(),
    ...scopeAttacks(),
    ...semanticAttacks(),
    ...bombAttacks(),
  ];
}

function readOperatorSeed(net: SecuredNetwork): Uint8Array {
  return new TextEncoder().encode(readFileSync(join(net.out, "operator", "nats.nk"), "utf8").trim());
}

/** Where decoder bombs go: each subject an actor subscribes to, published by a principal allowed to publish there. */
function bombTargets(
  net: SecuredNetwork,
): { target: string; as: string; region?: string; subject: string; processes: string[] }[] {
  const { volume: v, lane: l } = net;
  return [
    { target: "holder h-e1 (units)", as: "writer-w1", subject: unitSubject("h-e1", v, l), processes: ["holder/h-e1"] },
    {
      target: "holder h-w1 and writer (release frontiers)",
      as: "controller-ctl-1",
      subject: releaseSubject("h-w1"),
      processes: ["holder/h-w1", "writer/w1"],
    },
    {
      target: "holder h-w1 (custody transfers)",
      as: "holder-h-e1",
      subject: transferSubject("h-w1"),
      processes: ["holder/h-w1"],
    },
    { target: "holder h-w1 (fetches)", as: "operator", subject: fetchSubject("h-w1", v), processes: ["holder/h-w1"] },
    { target: "writer (credits)", as: "holder-h-e1", subject: creditSubject("h-e1", v, l), processes: ["writer/w1"] },
    { target: "writer (status)", as: "controller-ctl-1", subject: statusSubject(v), processes: ["writer/w1"] },
    {
      target: "writer, controller, holders (receipts)",
      as: "holder-h-e1",
      subject: receiptSubject(v, l),
      processes: ["writer/w1", "controller/ctl-1", "holder/h-e1", "holder/h-w1"],
    },
    { target: "controller (events)", as: "writer-w1", subject: eventSubject(v), processes: ["controller/ctl-1"] },
    {
      target: "controller (admission requests)",
      as: "holder-h-e1",
      subject: admitSubject("h-e1"),
      processes: ["controller/ctl-1"],
    },
  ];
}

function bombAttacks(): Attack[] {
  const bombs = decodeBombs(BOMB_BYTES).filter((b) => /dc ff ff|91 91|random/.test(b.name));
  return bombTargets({ volume: "vol-a", lane: "l0", controlRegion: "ctl" } as SecuredNetwork).map((t, i) => ({
    name: `decoder bombs (1 MiB) → ${t.target}`,
    async run(ctx, before) {
      const target = bombTargets(ctx.net)[i]!;
      const c = await ctx.as(target.as, target.region);
      const earlier = c.violations.length; // the connection may carry refusals of earlier attacks
      for (const b of bombs) c.transport.publish(target.subject, b.bytes);
      await c.transport.flush();
      if (c.violations.length > earlier)
        return { changed: [`the server refused a publisher that may publish on ${target.subject}`] };
      // Every process that receives the subject must have counted a rejection.
      const refusal = await eventually(8_000, async () => {
        const r = ctx.rejections(before, await ctx.read());
        const mine = r.filter((x) => target.processes.some((p) => x.startsWith(`${p}.`)));
        return target.processes.every((p) => mine.some((x) => x.startsWith(`${p}.`)))
          ? `counted: ${mine.join(", ")}`
          : undefined;
      });
      return refusal ? { refusal } : { note: `not refused: no rejection counted by ${target.processes.join(", ")}` };
    },
  }));
}
