/**
 * An immutable list that grows at the end and shrinks at the front without copying itself: items
 * sit in chunks of at most CHUNK, so an append copies one chunk and the (short) chunk index, and a
 * drop from the front slices one chunk. For machine-context state that grows on the hot path
 * (retained units, consistency manifests), where copying the whole array per change would not do.
 * Plain data; every function returns a new list and never changes its input.
 */
export interface ChunkedList<T> {
  readonly chunks: readonly (readonly T[])[];
  readonly size: number;
}

const CHUNK = 128;

export const emptyList = <T>(): ChunkedList<T> => ({ chunks: [], size: 0 });

/** The list with `item` appended. */
export function listPush<T>(list: ChunkedList<T>, item: T): ChunkedList<T> {
  const n = list.chunks.length;
  const last = list.chunks[n - 1];
  if (last === undefined || last.length >= CHUNK) return { chunks: [...list.chunks, [item]], size: list.size + 1 };
  const chunks = list.chunks.slice();
  chunks[n - 1] = [...last, item];
  return { chunks, size: list.size + 1 };
}

/** The last item, if any. */
export function listLast<T>(list: ChunkedList<T>): T | undefined {
  const last = list.chunks[list.chunks.length - 1];
  return last?.[last.length - 1];
}

/** The first item, if any. */
export function listFirst<T>(list: ChunkedList<T>): T | undefined {
  return list.chunks[0]?.[0];
}

/** The list with its last item replaced by `item` (appended when empty). */
export function listReplaceLast<T>(list: ChunkedList<T>, item: T): ChunkedList<T> {
  const n = list.chunks.length;
  const last = list.chunks[n - 1];
  if (last === undefined) return listPush(list, item);
  const chunks = list.chunks.slice();
  chunks[n - 1] = [...last.slice(0, -1), item];
  return { chunks, size: list.size };
}

/** The list without its first `count` items. */
export function listDropFirst<T>(list: ChunkedList<T>, count: number): ChunkedList<T> {
  if (count <= 0) return list;
  if (count >= list.size) return emptyList();
  let left = count;
  let i = 0;
  while (left >= list.chunks[i]!.length) left -= list.chunks[i++]!.length;
  const chunks = list.chunks.slice(i);
  if (left > 0) chunks[0] = chunks[0]!.slice(left);
  return { chunks, size: list.size - count };
}

/** The items in order (a new array). */
export function listToArray<T>(list: ChunkedList<T>): T[] {
  const out: T[] = [];
  for (const c of list.chunks) for (const x of c) out.push(x);
  return out;
}

/** Iterates the items in order. */
export function* listItems<T>(list: ChunkedList<T>): Generator<T> {
  for (const c of list.chunks) yield* c;
}
