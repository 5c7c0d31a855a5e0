import type { PeerDirectory } from "./peer-directory.ts";

/**
 * Whether `holderId`'s incarnation `incarnation` counts as a receiver of ours: the control log
 * admitted it (a directory that does not know the holder at all has nothing to check against).
 * Asking about a newer incarnation than the one known makes a directory that follows the log catch
 * up soon, so a restarted receiver's credit grants count once its admission is committed. Shared
 * by the volume writer (its first hops) and holders (their downstream edges).
 */
export function believesIncarnation(peers: PeerDirectory, holderId: string, incarnation: number): boolean {
  const admitted = peers.incarnation(holderId);
  return admitted === undefined || incarnation <= admitted || peers.key(holderId, incarnation) !== undefined;
}

/**
 * A credit sender's checks of edge `edge`'s grants: believe only its admitted incarnations, and count what is refused
 * as `edge_credit_<code>`.
 */
export function edgeGrantChecks(
  peers: PeerDirectory,
  counters: { inc(name: string): void },
  edge: string,
): { believes(incarnation: number): boolean; onRefused(code: string): void } {
  return {
    believes: (incarnation) => believesIncarnation(peers, edge, incarnation),
    onRefused: (code) => counters.inc(`edge_credit_${code}`),
  };
}
