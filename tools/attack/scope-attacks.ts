/**
 * Reads and releases across volumes: a fetch names its volume in the subject, and a controller
 * may fetch only its volumes' units and send release frontiers only to its volumes' holders. The
 * attacked network declares a second volume `vol-b` whose controller's credentials are used here.
 */
import { RangeSet } from "../../lanes/index.ts";
import { fetchSubject, releaseSubject } from "../../transport/protocol/index.ts";
import { encodeMessage, releaseFrontierSpec, unitFetchSpec } from "../../transport/protocol/index.ts";
import type { Attack } from "./attack.ts";
import type { AttackerConnection } from "./principal.ts";
import { counter } from "./network-state.ts";

const OTHER_VOLUME = "vol-b";

/** Waits (at most `ms`) for the server to deny `c` a publish on `subject`. */
async function denied(c: AttackerConnection, subject: string, ms = 5_000): Promise<string | undefined> {
  await c.transport.flush().catch(() => undefined);
  const end = Date.now() + ms;
  for (;;) {
    if (c.violations.some((x) => x.subject === subject && x.operation === "publish"))
      return `server: publish on ${subject} denied`;
    if (Date.now() > end) return undefined;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A fetch request body for `volume`'s units 1-1000 at `holder`. */
function fetchBody(holder: string, volume: string, lane: string): Uint8Array {
  return encodeMessage(unitFetchSpec, {
    holder,
    volume,
    lane,
    ranges: RangeSet.of(1, 1000).toJSON(),
    after: -1,
    limit: 256,
  });
}

/** The scope attacks, in the order they run. */
export function scopeAttacks(): Attack[] {
  return [
    {
      name:
        "another volume's controller fetches the volume's units from its holder (on the volume's subject, and " +
        "on its own volume's subject with the volume in the body)",
      async run(ctx, before) {
        const { volume: v, lane: l } = ctx.net;
        const c = await ctx.as("controller-ctl-2");
        const own = fetchSubject("h-w1", v);
        c.transport.publish(own, fetchBody("h-w1", v, l));
        const refusal = await denied(c, own);
        if (refusal === undefined) return {};
        // Its own volume's subject, which the server lets through, with the attacked volume in the body: the holder
        // refuses it.
        const disguised = fetchSubject("h-w1", OTHER_VOLUME);
        let answered = false;
        await c.transport.request(disguised, fetchBody("h-w1", v, l), { timeoutMs: 2_000 }).then(
          () => (answered = true),
          () => undefined,
        );
        if (answered) return { changed: [`h-w1 answered a fetch of ${v} asked on ${disguised}`] };
        const after = await ctx.read();
        const counted =
          counter(after, "holder/h-w1", "fetch_volume_not_in_subject") >
          counter(before, "holder/h-w1", "fetch_volume_not_in_subject");
        return counted
          ? { refusal: `${refusal}; h-w1 counted fetch_volume_not_in_subject and did not answer` }
          : { note: `${refusal}; but h-w1 did not count the disguised fetch` };
      },
    },
    {
      name: "fetch of the volume's units with credentials whose job reads none (holder, writer)",
      async run(ctx) {
        const { volume: v, lane: l } = ctx.net;
        const refusals: string[] = [];
        for (const who of ["holder-h-e1", "writer-w1"]) {
          const c = await ctx.as(who);
          const subject = fetchSubject("h-w1", v);
          c.transport.publish(subject, fetchBody("h-w1", v, l));
          const r = await denied(c, subject);
          if (r === undefined) return {};
          refusals.push(`${who}: ${r}`);
        }
        return { refusal: refusals.join("; ") };
      },
    },
    {
      name: "release frontier from a controller to a holder of another volume",
      async run(ctx, before) {
        const c = await ctx.as("controller-ctl-1");
        const subject = releaseSubject("h-e2");
        c.transport.publish(
          subject,
          encodeMessage(releaseFrontierSpec, {
            holder: "h-e2",
            volume: OTHER_VOLUME,
            lane: ctx.net.lane,
            ranges: [[1, 1_000_000]],
            epoch: 1,
            controlSeq: before.log.lastSeq,
          }),
        );
        const refusal = await denied(c, subject);
        return refusal ? { refusal } : {};
      },
    },
  ];
}
