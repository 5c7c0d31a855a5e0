import type { FileHandleLike } from "../core/index.ts";
import { BadRequestError } from "./volume-errors.ts";

/**
 * Views of byte regions of one open file, each a FileHandleLike whose positions start at its
 * region's base: the one-file layout hands the extent and the WAL code such views, so they run
 * unchanged. A sync of any view syncs the whole file (that is the point: one fdatasync covers
 * both regions). The file is closed when the last view is closed.
 */
export function fileRegions(
  file: FileHandleLike,
  regions: readonly { base: number; length: number }[],
): FileHandleLike[] {
  let open = regions.length;
  return regions.map(({ base, length }) => {
    let closed = false;
    const inside = (position: number, n: number) => {
      if (position < 0 || position + n > length)
        throw new BadRequestError(`I/O at ${position}+${n} is outside the ${length}-byte region of ${file.path}`, {
          position,
          length: n,
          region: length,
        });
    };
    const view: FileHandleLike = {
      path: `${file.path}@${base}`,
      read(buf, offset, n, position) {
        inside(position, Math.min(n, Math.max(0, length - position)));
        return file.read(buf, offset, Math.min(n, length - position), base + position);
      },
      write(buf, offset, n, position) {
        inside(position, n);
        return file.write(buf, offset, n, base + position);
      },
      datasync: () => file.datasync(),
      sync: () => file.sync(),
      truncate() {
        return Promise.reject(
          new BadRequestError("a region of a shared file cannot be truncated", { path: file.path, base }),
        );
      },
      async size() {
        return Math.max(0, Math.min(length, (await file.size()) - base));
      },
      async close() {
        if (closed) return;
        closed = true;
        if (--open === 0) await file.close();
      },
    };
    return view;
  });
}
