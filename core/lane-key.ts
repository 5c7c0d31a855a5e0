/**
 * The two keys naming one lane of one volume. They differ on purpose and are not interchangeable:
 * each appears where its separator is part of what others read.
 */

/**
 * `volume.lane`: the lane's key in arenas and in the lane-arena actor's snapshot (the same shape
 * as the lane's subject tokens). Unambiguous: identifiers never contain ".".
 */
export function laneKey(volume: string, lane: string): string {
  return `${volume}.${lane}`;
}

/**
 * `volume/lane`: the lane's key inside a holder, and the lane label in its observations and in
 * the process stats it serves (`<key>.retainedMax`, …), where "." already separates the stat name.
 */
export function holderLaneKey(volume: string, lane: string): string {
  return `${volume}/${lane}`;
}
