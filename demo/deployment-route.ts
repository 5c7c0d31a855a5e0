import { edgeBetween, siteOfActor, type Deployment } from "./deployment.ts";
import { unitDestination, type LinkRoute } from "../transport/index.ts";

/**
 * The link route of a process at `fromSite`: units to a holder at another site take the declared
 * edge between the two sites; units inside one site, to unknown holders, over undeclared edges,
 * and every other subject go unshaped. Pure.
 */
export function deploymentRoute(d: Deployment, fromSite: string): LinkRoute {
  return (subject) => {
    const toHolder = unitDestination(subject);
    if (toHolder === undefined) return undefined;
    const toSite = siteOfActor(d, toHolder);
    if (toSite === undefined || toSite === fromSite) return undefined;
    const e = edgeBetween(d, fromSite, toSite);
    if (e === undefined) return undefined;
    return { toSite, toHolder, profile: { latencyMs: e.latencyMs, jitterMs: e.jitterMs, bytesPerMs: e.bandwidthMBps * 1000 } };
  };
}
