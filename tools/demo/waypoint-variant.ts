/**
 * The same deployment without one holder (the waypoint), for the side-by-side volume (pure): the
 * holder disappears, whoever sent to it sends to its downstream holders instead, and those take
 * its senders as their upstream. Edges, sites and regions stay, so the bytes simply travel the
 * direct legs (the writer's site straight to Europe) that the deployment already declares.
 */
import { DeploymentError, parseDeployment, type Deployment } from "./deployment.ts";

/** The deployment `volume` runs on: the comparison volume's leaves the waypoint out, every other volume's is `d`. */
export function deploymentOfVolume(d: Deployment, volume: string): Deployment {
  const cmp = d.waypointComparison;
  return cmp !== undefined && cmp.volume === volume ? withoutHolder(d, cmp.holder) : d;
}

/**
 * `d` without holder `id`, its custody edges rewired around it. Throws DeploymentError if `id` is no
 * holder or the result is invalid.
 */
export function withoutHolder(d: Deployment, id: string): Deployment {
  const gone = d.holders.find((h) => h.id === id);
  if (gone === undefined) throw new DeploymentError(`deployment: no holder ${id} to leave out`, { holder: id });
  const swap = (list: readonly string[], replacement: readonly string[]) => [
    ...new Set(list.flatMap((x) => (x === id ? [...replacement] : [x]))),
  ];
  const writerSendsToIt = gone.upstream.includes(d.writer.id);
  const holders = d.holders
    .filter((h) => h.id !== id)
    .map((h) => ({ ...h, upstream: swap(h.upstream, gone.upstream), downstream: swap(h.downstream, gone.downstream) }));
  const next = {
    ...d,
    writer: {
      ...d.writer,
      holders: writerSendsToIt ? swap(d.writer.holders, gone.downstream) : d.writer.holders.filter((h) => h !== id),
    },
    holders,
    waypointComparison: undefined,
  };
  // A holder cannot forward to itself after the rewiring.
  for (const h of next.holders) h.downstream = h.downstream.filter((x) => x !== h.id);
  return parseDeployment(JSON.parse(JSON.stringify(next)));
}
