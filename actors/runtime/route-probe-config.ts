import { z } from "zod";
import { CustodyError, systemClock } from "../../core/index.ts";
import type { Transport } from "../../transport/index.ts";
import type { LinksConfig } from "./role-links.ts";
import { RouteProber } from "./route-prober.ts";
import { UnitTrafficMeter } from "./unit-traffic-meter.ts";

/**
 * The optional `probe` section of a holder or writer role config: measured routes. The process
 * answers probes on its own probe subject and, every `intervalMs`, probes its peers within
 * `budgetBytesPerInterval` and publishes what it measured (see actors/runtime/route-prober.ts). `site`
 * and `peers` default to the `links` section's (the edges this process sends units on).
 */
export const probeSchema = z
  .strictObject({
    intervalMs: z.number().int().positive(),
    budgetBytesPerInterval: z.number().int().nonnegative(),
    pings: z.number().int().min(1).max(64).optional(),
    frameBytes: z.number().int().min(512).max(65_536).optional(),
    timeoutMs: z.number().int().positive().optional(),
    site: z.string().min(1).optional(),
    peers: z.record(z.string().min(1), z.strictObject({ site: z.string().min(1) })).optional(),
  })
  .optional();
export type ProbeConfig = NonNullable<z.infer<typeof probeSchema>>;

/**
 * The transport a role sends through, metered and probing when the config has a `probe` section
 * (else `inner` itself and a no-op stop). Throws CustodyError `invalid_role_config` when no site is known.
 */
export function withRouteProbing(
  inner: Transport,
  probe: ProbeConfig | undefined,
  links: LinksConfig | undefined,
  self: string,
): { transport: Transport; prober?: RouteProber; stop(): void } {
  if (probe === undefined) return { transport: inner, stop: () => undefined };
  const site = probe.site ?? links?.site;
  if (site === undefined)
    throw new CustodyError("invalid_role_config", "probe: a site is needed (probe.site or links.site)", {
      path: "probe.site",
    });
  const peers =
    probe.peers ?? Object.fromEntries(Object.entries(links?.peers ?? {}).map(([id, p]) => [id, { site: p.site }]));
  const meter = new UnitTrafficMeter(inner);
  const { intervalMs, budgetBytesPerInterval, pings, frameBytes, timeoutMs } = probe;
  const prober = new RouteProber(
    { self, site, peers, intervalMs, budgetBytesPerInterval, pings, frameBytes, timeoutMs },
    { transport: meter, clock: systemClock, meter },
  );
  prober.start();
  return { transport: meter, prober, stop: () => prober.stop() };
}
