import { parentDir, type FileLayer } from "../core/index.ts";
import { VolumeFiles, type VolumeGeometry } from "./format.ts";
import { SmartWalVolume } from "./smartwal-volume.ts";
import { createVolumeFiles, type CreateRun, type CreateVolumeOptions } from "./volume-files.ts";
import type { OpenVolumeOptions } from "./volume-types.ts";
import { VolumeExistsError } from "./volume-errors.ts";

/**
 * A volume under construction (a recovery's destination). Every file of it carries this suffix and
 * is created mode 0600, so while it is built the directory holds no `volume.hdr`: nothing mounts
 * it, and nothing reading the directory takes it for a volume. `sealStagedVolume` gives the files
 * their names once the volume is complete and checked.
 */
export const PARTIAL_SUFFIX = ".partial";

/** Permission bits of a staged volume's files (a recovered volume holds decrypted data). */
export const STAGED_FILE_MODE = 0o600;

/** The volume's file names; the header last, as the one that makes a directory a volume. */
const NAMES: readonly string[] = [
  VolumeFiles.data,
  VolumeFiles.extent,
  VolumeFiles.wal,
  ...VolumeFiles.checkpoints,
  VolumeFiles.header,
];

const join = (dir: string, name: string) => `${dir}/${name}`;

/** A file layer that keeps `dir`'s volume files under their `.partial` names, each created 0600. */
export function stagedFileLayer(fl: FileLayer, dir: string): FileLayer {
  const staged = (path: string) => (NAMES.some((n) => path === join(dir, n)) ? path + PARTIAL_SUFFIX : path);
  return {
    open: (path, opts) => fl.open(staged(path), { ...opts, mode: STAGED_FILE_MODE }),
    exists: (path) => fl.exists(staged(path)),
    mkdirp: (path) => fl.mkdirp(path),
    rename: (from, to) => fl.rename(staged(from), staged(to)),
    unlink: (path) => fl.unlink(staged(path)),
    readdir: (path) => fl.readdir(path),
    syncDir: (path) => fl.syncDir(path),
  };
}

/**
 * Starts a volume at `dir` afresh, staged: removes what an earlier build left (its `.partial`
 * files, and the files of a seal cut short — named, but with the header still `.partial`), then
 * creates the volume's files under their partial names. Throws VolumeExistsError when `dir` holds
 * a volume (a sealed one is never removed).
 */
export async function stageVolume(
  fl: FileLayer,
  dir: string,
  opts: CreateVolumeOptions,
  run: CreateRun = {},
): Promise<VolumeGeometry> {
  await fl.mkdirp(dir);
  if (await fl.exists(join(dir, VolumeFiles.header))) throw new VolumeExistsError(dir);
  if (await fl.exists(join(dir, VolumeFiles.header + PARTIAL_SUFFIX))) {
    for (const n of NAMES) if (await fl.exists(join(dir, n))) await fl.unlink(join(dir, n));
  }
  await discardStagedVolume(fl, dir);
  return createVolumeFiles(stagedFileLayer(fl, dir), dir, opts, run);
}

/** Mounts the staged volume at `dir` (to build or check it). */
export function openStagedVolume(
  fl: FileLayer,
  dir: string,
  opts: Omit<OpenVolumeOptions, "fileLayer"> = {},
): Promise<SmartWalVolume> {
  return SmartWalVolume.open(dir, { ...opts, fileLayer: stagedFileLayer(fl, dir) });
}

/**
 * Seals the staged volume at `dir` (closed, complete and checked by the caller): fsyncs every
 * file, renames the others into place, fsyncs the directory, then renames the header and fsyncs
 * the directory again (and its parent, which may have been created for it). A crash at any point
 * leaves either no header or a volume whose every file was durable first.
 */
export async function sealStagedVolume(fl: FileLayer, dir: string): Promise<void> {
  const present: string[] = [];
  for (const n of NAMES) if (await fl.exists(join(dir, n + PARTIAL_SUFFIX))) present.push(n);
  if (!present.includes(VolumeFiles.header)) throw new Error(`no staged volume at ${dir}`);
  for (const n of present) {
    const f = await fl.open(join(dir, n + PARTIAL_SUFFIX));
    try {
      await f.sync();
    } finally {
      await f.close();
    }
  }
  for (const n of present) if (n !== VolumeFiles.header) await fl.rename(join(dir, n + PARTIAL_SUFFIX), join(dir, n));
  await fl.syncDir(dir);
  await fl.rename(join(dir, VolumeFiles.header + PARTIAL_SUFFIX), join(dir, VolumeFiles.header));
  await fl.syncDir(dir);
  await fl.syncDir(parentDir(dir));
}

/**
 * Removes the `.partial` files of a build at `dir` (a stopped or failed one); a sealed volume's files are never
 * touched.
 */
export async function discardStagedVolume(fl: FileLayer, dir: string): Promise<void> {
  for (const n of NAMES) {
    const p = join(dir, n + PARTIAL_SUFFIX);
    if (await fl.exists(p)) await fl.unlink(p);
  }
}
