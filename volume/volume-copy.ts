import { constants } from "node:fs";
import { copyFile, mkdir, open, readdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * Copies a closed volume's files from `fromDir` into a new directory `toDir`, each one durable
 * (fsync), and the directory entry too. A closed volume is its files, so the copy opens as the
 * same volume. Cheaper than reading every block and writing it again: the kernel copies (or
 * clones, where the file system can) without the bytes passing through this process's memory.
 * Both directories must be on the same machine; `fromDir` must not be open for writing.
 */
export async function copyVolumeFiles(fromDir: string, toDir: string, signal?: AbortSignal): Promise<void> {
  await mkdir(toDir, { recursive: false });
  for (const entry of await readdir(fromDir, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    signal?.throwIfAborted();
    const to = join(toDir, entry.name);
    await copyFile(join(fromDir, entry.name), to, constants.COPYFILE_FICLONE);
    await fsyncPath(to, "r+");
  }
  await fsyncPath(toDir, "r");
}

async function fsyncPath(path: string, flags: "r" | "r+"): Promise<void> {
  const fh = await open(path, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
