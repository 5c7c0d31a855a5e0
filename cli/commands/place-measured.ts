import { CustodyError } from "../../core/index.ts";
import { RouteTable, type RouteMeasurement } from "../../policies/index.ts";
import { decodeRouteMeasurements, parseSubjectOf, subjectFilter } from "../../transport/protocol/index.ts";
import { connectOperatorTransport, type OperatorConnectionOptions } from "../operator-connection.ts";

/**
 * Listens `listenMs` on `custody.v1.route.*` and returns the newest measurement per peer pair.
 * A measurement is dated on this process's clock (arrival minus its published age). A malformed
 * or mis-sent message is skipped and counted in `skipped`.
 */
export async function collectRouteMeasurements(
  o: OperatorConnectionOptions,
  listenMs: number,
): Promise<{ routes: RouteMeasurement[]; skipped: number }> {
  const t = await connectOperatorTransport(o, "custody-place");
  const table = new RouteTable();
  let skipped = 0;
  try {
    const sub = t.subscribe(subjectFilter("route"), (msg) => {
      const at = Date.now();
      try {
        const { fromPeer } = parseSubjectOf("route", msg.subject);
        const m = decodeRouteMeasurements(msg.data, fromPeer);
        for (const r of m.routes) {
          table.add({
            from: m.from,
            fromSite: m.fromSite,
            to: r.to,
            toSite: r.toSite,
            rttMs: r.rttMs,
            jitterMs: r.jitterMs,
            throughputBytesPerSec: r.throughputBytesPerSec,
            loadBytesPerSec: r.loadBytesPerSec,
            measuredAtMs: at - r.ageMs,
          });
        }
      } catch (err) {
        if (!(err instanceof CustodyError)) throw err;
        skipped++;
      }
    });
    await t.flush();
    await new Promise((r) => setTimeout(r, listenMs));
    sub.unsubscribe();
  } finally {
    await t.close();
  }
  return { routes: table.all(), skipped };
}
