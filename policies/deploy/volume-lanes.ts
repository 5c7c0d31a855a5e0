import { DeploymentError, type Deployment, type DeploymentVolume } from "./deployment-schema.ts";

/**
 * The volume's lanes as the writer splits them: declared, or one lane `l…` over every block to the
 * holders it feeds.
 */
export function volumeLanes(
  d: Deployment,
  v: DeploymentVolume,
): { lane: string; fromLba: number; toLba: number; holders: string[] }[] {
  if (v.lanes !== undefined)
    return v.lanes.map((l) => ({ lane: l.lane, fromLba: l.fromLba, toLba: l.toLba, holders: [...l.firstHops] }));
  const served = d.holders
    .filter((h) => h.standby !== true)
    .flatMap((h) => h.lanes.filter((l) => l.volume === v.id).map((l) => ({ holder: h.id, ...l })));
  const names = [...new Set(served.map((s) => s.lane))];
  if (names.length !== 1)
    throw new DeploymentError(
      `invalid deployment: volumes.${v.id}.lanes: ` +
        `holders serve ${names.length} lanes of ${v.id} (${names.join(", ") || "none"}); declare the lanes`,
      { path: `volumes.${v.id}.lanes` },
    );
  const firstHops = served.filter((s) => s.upstream.includes(v.writer.id)).map((s) => s.holder);
  if (firstHops.length === 0)
    throw new DeploymentError(`invalid deployment: no holder of ${v.id} has writer ${v.writer.id} upstream`, {
      path: `volumes.${v.id}`,
    });
  return [{ lane: names[0]!, fromLba: 0, toLba: v.blockCount - 1, holders: firstHops }];
}
