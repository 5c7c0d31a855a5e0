import type { Tracer } from "@opentelemetry/api";
import { z } from "zod";
import { systemClock } from "../../core/index.ts";
import { ShapedTransport, unitDestination, type LinkRoute } from "../../transport/index.ts";
import type { Transport } from "../../transport/index.ts";
import { probeDestination } from "../../transport/protocol/index.ts";
import { UnitTrafficMeter } from "./unit-traffic-meter.ts";

/**
 * The optional `links` section of a holder or writer role config: link shaping, a test and demo
 * facility that makes geography visible on one machine (see transport/link-shaper.ts). Units this
 * process sends to a listed holder at another site are held back by that link's latency, jitter
 * and serialization time; everything else (credits, receipts, requests, unlisted holders) passes.
 */
export const linksSchema = z
  .strictObject({
    /** The site this process runs at. */
    site: z.string().min(1),
    /** Per destination holder: its site and the shape of the link to it. */
    peers: z.record(
      z.string().min(1),
      z.strictObject({
        site: z.string().min(1),
        latencyMs: z.number().nonnegative(),
        jitterMs: z.number().nonnegative().optional(),
        bandwidthMBps: z.number().positive(),
      }),
    ),
  })
  .optional();
export type LinksConfig = NonNullable<z.infer<typeof linksSchema>>;

/** The route of a `links` section (pure): units and route probes to a listed peer at another site take its link. */
export function linksRoute(links: LinksConfig): LinkRoute {
  return (subject) => {
    const toHolder = unitDestination(subject) ?? probeDestination(subject);
    if (toHolder === undefined) return undefined;
    const peer = links.peers[toHolder];
    if (peer === undefined || peer.site === links.site) return undefined;
    return {
      toSite: peer.site,
      toHolder,
      profile: { latencyMs: peer.latencyMs, jitterMs: peer.jitterMs ?? 0, bytesPerMs: peer.bandwidthMBps * 1000 },
    };
  };
}

/** The transport a role's actor sends through: shaped when the config has `links`, else `inner` itself. */
export function shapedByLinks(inner: Transport, links: LinksConfig | undefined, tracer?: Tracer): Transport {
  if (links === undefined) return inner;
  return new ShapedTransport(inner, {
    fromSite: links.site,
    route: linksRoute(links),
    clock: systemClock,
    random: Math.random,
    ...(tracer ? { tracer } : {}),
  });
}

/** Units held back on shaped links right now (sent, not yet delivered); 0 for an unshaped transport. */
export function linkInFlight(t: Transport): number {
  if (t instanceof UnitTrafficMeter) return linkInFlight(t.inner);
  return t instanceof ShapedTransport ? t.inFlight : 0;
}
