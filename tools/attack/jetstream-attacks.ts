/**
 * Consumers as a weapon: a push consumer's deliver subject is in the create request's body, where
 * nats-server 2.9 permissions cannot see it, and the server then delivers on it as itself. The
 * finding: ten durable push consumers on the control stream (ack wait 100 ms, unlimited
 * redelivery) delivering onto another holder's unit subject made a storm that outlived the
 * attacker. No role but the operator may create a consumer now (docs/security.md); these attacks
 * try it with a holder's and the writer's credentials, onto every kind of subject a role listens to.
 */
import { AckPolicy, DeliverPolicy, jetstreamManager } from "@nats-io/jetstream";
import {
  admitSubject,
  eventSubject,
  receiptSubject,
  statusSubject,
  transferSubject,
  unitSubject,
} from "../../transport/protocol/index.ts";
import { controlStreamName } from "../../transport/index.ts";
import type { Attack, AttackContext } from "./attack.ts";
import type { AttackerConnection } from "./principal.ts";

/** The redelivery storm's settings: 100 ms ack wait, never given up. */
const STORM = {
  ack_policy: AckPolicy.Explicit,
  ack_wait: 100_000_000,
  max_deliver: -1,
  deliver_policy: DeliverPolicy.All,
} as const;

/**
 * Tries one durable push consumer per deliver subject with `who`'s credentials: each create must
 * fail with the server's denial of a `$JS.API.CONSUMER.` subject. Returns the refusal, or nothing
 * when one was created or not denied by the server.
 */
async function tryConsumers(ctx: AttackContext, who: string, targets: readonly string[]): Promise<string | undefined> {
  const c = await ctx.as(who, who.includes("h-w1") ? "west" : "east");
  const jsm = await jetstreamManager(c.transport.connection, { timeout: 2_000 });
  const stream = controlStreamName(ctx.net.controlRegion);
  let first: string | undefined;
  for (const [i, deliver] of targets.entries()) {
    const name = `storm-${who}-${i}`;
    const seen = c.violations.length;
    try {
      await jsm.consumers.add(stream, { durable_name: name, deliver_subject: deliver, ...STORM });
      return undefined;
    } catch {
      const v = await consumerDenial(c, seen);
      if (v === undefined) return undefined;
      first ??= v;
    }
  }
  return `${who}: ${targets.length} creates onto ${[...new Set(targets)].join(", ")} denied (${first} …)`;
}

/** The server's denial of a consumer API subject reported to `c` after its `seen`-th violation, if any comes. */
async function consumerDenial(c: AttackerConnection, seen: number, ms = 5_000): Promise<string | undefined> {
  await c.transport.flush().catch(() => undefined);
  const end = Date.now() + ms;
  for (;;) {
    const v = c.violations
      .slice(seen)
      .find((x) => x.operation === "publish" && x.subject.startsWith("$JS.API.CONSUMER."));
    if (v !== undefined) return `server denied ${v.subject}`;
    if (Date.now() > end) return undefined;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Consumers on the control stream now, as the operator sees them (there must be none). */
async function consumersOnControlStream(ctx: AttackContext): Promise<string[]> {
  const op = await ctx.as("operator");
  const jsm = await jetstreamManager(op.transport.connection, { timeout: 5_000 });
  const names: string[] = [];
  for await (const ci of jsm.consumers.list(controlStreamName(ctx.net.controlRegion))) names.push(ci.name);
  return names;
}

/** The consumer attacks, in the order they run. */
export function jetStreamAttacks(): Attack[] {
  return [
    {
      name:
        "redelivery storm: durable push consumers on the control stream from a holder's credentials, delivering " +
        "onto another holder's unit subject",
      async run(ctx) {
        const onto = unitSubject("h-w1", ctx.net.volume, ctx.net.lane);
        const refusal = await tryConsumers(
          ctx,
          "holder-h-e1",
          Array.from({ length: 10 }, () => onto),
        );
        const left = await consumersOnControlStream(ctx);
        return {
          ...(refusal ? { refusal } : {}),
          changed: left.map((n) => `consumer ${n} exists on the control stream`),
        };
      },
    },
    {
      name:
        "push consumers delivering onto status, event, admit, receipt, transfer and inbox subjects, from a " +
        "holder's and the writer's credentials",
      async run(ctx) {
        const { volume: v, lane: l } = ctx.net;
        const targets = [
          statusSubject(v),
          eventSubject(v),
          admitSubject("h-e1"),
          receiptSubject(v, l),
          transferSubject("h-w1"),
          "_INBOX.controller.ctl-1.storm",
        ];
        const refusals: string[] = [];
        for (const who of ["holder-h-w1", "writer-w1"]) {
          const r = await tryConsumers(ctx, who, targets);
          if (r === undefined)
            return {
              changed: (await consumersOnControlStream(ctx)).map((n) => `consumer ${n} exists on the control stream`),
            };
          refusals.push(r);
        }
        const left = await consumersOnControlStream(ctx);
        return {
          refusal: refusals.join(" | "),
          changed: left.map((n) => `consumer ${n} exists on the control stream`),
        };
      },
    },
  ];
}
