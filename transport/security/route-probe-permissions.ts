import { probeSubject, routeSubject, subjectFilter } from "../protocol/index.ts";

/**
 * The measured-routes part of a principal's permissions (see principal-permissions.ts). Writers
 * and holders probe their edges and answer probes: each subscribes only to its own probe subject
 * and publishes measurements only as itself; it may probe (and answer) any peer, since an
 * answer goes back to whoever probed and the holder's scope does not list its upstream senders.
 * The controller and the operator (`custody place --measured`) read every measurement. Pure.
 */
export function addRoutePermissions(role: string, id: string, pub: Set<string>, sub: Set<string>): void {
  if (role === "writer" || role === "holder") {
    sub.add(probeSubject(id));
    pub.add(subjectFilter("probe"));
    pub.add(routeSubject(id));
  } else if (role === "controller" || role === "operator") {
    sub.add(subjectFilter("route"));
  }
}
