/**
 * The name of the JetStream cluster that stores a replicated control log `controlRegion`:
 * also its gateway name, so no region may be called that.
 */
export function controlClusterName(controlRegion: string): string {
  return `control-${controlRegion}`;
}
