/**
 * Attacks on writer-authenticated units: the writer's own NATS credentials, stolen without its
 * signing key, pass the server's permission check on the holders' unit subjects, so only the
 * writer attestation can refuse what they inject; a holder's credentials may offer custody
 * transfers, so only the attestations an offer must carry refuse forged units offered that way.
 * Each returns the holders' counted refusal.
 */
import { makeTransportUnit } from "../../lanes/index.ts";
import {
  encodeMessage,
  encodeTransferOffer,
  transferSubject,
  unitSpec,
  unitSubject,
} from "../../transport/protocol/index.ts";
import { SENDER_HEADER, SENT_THROUGH_HEADER, SESSION_HEADER, UNIT_ATTESTATION_HEADER } from "../../transport/index.ts";
import type { Attack, AttackContext } from "./attack.ts";
import type { NetworkState } from "./network-state.ts";

const FORGED_FROM = 20_000_001;
const HOLDERS = ["h-e1", "h-w1"];

/** Waits (at most `ms`) for counters matching `pattern` that grew since `before`. */
async function countedAs(
  ctx: AttackContext,
  before: NetworkState,
  pattern: RegExp,
  ms = 8_000,
): Promise<string | undefined> {
  const end = Date.now() + ms;
  for (;;) {
    const r = ctx.rejections(before, await ctx.read()).filter((n) => pattern.test(n));
    if (r.length > 0) return `counted: ${r.join(", ")}`;
    if (Date.now() > end) return undefined;
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** Holders that retain any sequence from FORGED_FROM on (the attack's state change). */
function forgedRetained(ctx: AttackContext, s: NetworkState): string[] {
  const key = `${ctx.net.volume}/${ctx.net.lane}.retainedMax`;
  return Object.entries(s.processes)
    .filter(([k, p]) => k.startsWith("holder/") && (p.figures[key] ?? 0) >= FORGED_FROM)
    .map(([k]) => `${k} retains forged sequences`);
}

const forgedUnit = (ctx: AttackContext, first: number, term: number) =>
  makeTransportUnit({
    volume: ctx.net.volume,
    lane: ctx.net.lane,
    term,
    firstSeq: first,
    lastSeq: first + 1,
    commitTs: [1, 2],
    payload: new Uint8Array(64).fill(7),
  });

/** Publishes `unit` to every first hop with the writer's credentials, posing as the writer. */
async function injectAsWriter(
  ctx: AttackContext,
  unit: ReturnType<typeof forgedUnit>,
  attestation?: string,
): Promise<string | undefined> {
  const c = await ctx.as("writer-w1");
  const headers: Record<string, string> = {
    [SENDER_HEADER]: "w1",
    [SESSION_HEADER]: "1",
    [SENT_THROUGH_HEADER]: String(unit.lastSeq),
  };
  if (attestation !== undefined) headers[UNIT_ATTESTATION_HEADER] = attestation;
  const subjects = HOLDERS.map((h) => unitSubject(h, ctx.net.volume, ctx.net.lane));
  for (const s of subjects) c.transport.publish(s, encodeMessage(unitSpec, unit), { headers });
  await c.transport.flush();
  // The server must have let them through: a denied publish would prove nothing about the
  // attestation. (The connection is shared by the run: only denials of these subjects count.)
  const denied = c.violations.filter((v) => subjects.includes(v.subject));
  return denied.length > 0 ? `server denied: ${denied.map((v) => v.subject).join(", ")}` : undefined;
}

/** The attacks on unit authentication, in the order they run. */
export function unitAuthAttacks(): Attack[] {
  return [
    {
      name: "units injected with the writer's NATS credentials, without its signing key",
      async run(ctx, before) {
        const denied = await injectAsWriter(ctx, forgedUnit(ctx, FORGED_FROM, 1));
        if (denied !== undefined) return { note: denied };
        const refusal = await countedAs(ctx, before, /unit_unsigned/);
        return refusal ? { refusal, changed: forgedRetained(ctx, await ctx.read()) } : {};
      },
    },
    {
      name: "a captured writer attestation replayed with units of another term and range",
      async run(ctx, before) {
        const tap = await ctx.as("holder-h-e1");
        const token = await new Promise<string>((resolve) => {
          const sub = tap.transport.subscribe(unitSubject("h-e1", ctx.net.volume, ctx.net.lane), (m) => {
            const t = m.headers[UNIT_ATTESTATION_HEADER];
            if (t === undefined) return;
            sub.unsubscribe();
            resolve(t.split(",")[0]!);
          });
        });
        const denied =
          (await injectAsWriter(ctx, forgedUnit(ctx, FORGED_FROM + 10, 2), token)) ??
          (await injectAsWriter(ctx, forgedUnit(ctx, FORGED_FROM + 20, 1), token));
        if (denied !== undefined) return { note: denied };
        const refusal = await countedAs(ctx, before, /unit_not_attested/);
        return refusal ? { refusal, changed: forgedRetained(ctx, await ctx.read()) } : {};
      },
    },
    {
      name:
        "a custody transfer offer of forged units from a holder's NATS credentials, unsigned and with a " +
        "captured writer attestation",
      async run(ctx, before) {
        const c = await ctx.as("holder-h-e1");
        const token = await capturedToken(ctx);
        const subject = transferSubject("h-w1");
        const offer = (first: number, tokens: string[], offerId: number) =>
          encodeTransferOffer(
            {
              from: "h-e1",
              to: "h-w1",
              volume: ctx.net.volume,
              lane: ctx.net.lane,
              offerId,
              units: [encodeMessage(unitSpec, forgedUnit(ctx, first, 1))],
            },
            tokens,
          );
        c.transport.publish(subject, offer(FORGED_FROM + 30, [], 90_001));
        c.transport.publish(subject, offer(FORGED_FROM + 40, [token], 90_002));
        await c.transport.flush();
        const denied = c.violations.filter((v) => v.subject === subject);
        if (denied.length > 0) return { note: `server denied: ${subject}` };
        const unsigned = await countedAs(ctx, before, /transfer_unit_unsigned/);
        const replayed = await countedAs(ctx, before, /transfer_unit_not_attested/);
        return unsigned && replayed
          ? { refusal: `${unsigned}; ${replayed}`, changed: forgedRetained(ctx, await ctx.read()) }
          : {};
      },
    },
  ];
}

/** The first writer attestation seen on h-e1's unit subject (with h-e1's own right to read it). */
async function capturedToken(ctx: AttackContext): Promise<string> {
  const tap = await ctx.as("holder-h-e1");
  return new Promise<string>((resolve) => {
    const sub = tap.transport.subscribe(unitSubject("h-e1", ctx.net.volume, ctx.net.lane), (m) => {
      const t = m.headers[UNIT_ATTESTATION_HEADER];
      if (t === undefined) return;
      sub.unsubscribe();
      resolve(t.split(",")[0]!);
    });
  });
}
