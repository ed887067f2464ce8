// Files replaced whole: written beside the target, synced, then renamed over it, so a reader never
// sees half a file and a crash leaves either the old file or the new one.
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Runs `write` on a temporary file beside `target`, syncs it, and renames it over `target`. */
export async function writeAtomically(
  target: string,
  write: (tmp: string) => Promise<void>,
): Promise<void> {
  await mkdir(dirname(target), { recursive: true });
  const tmp = join(
    dirname(target),
    `.${basename(target)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    await write(tmp);
    const fh = await open(tmp, 'r+');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, target);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  // The rename itself is made durable with the folder.
  const dir = await open(dirname(target), 'r');
  try {
    await dir.sync();
  } catch {
    // Some file systems refuse fsync on a folder; the rename is atomic all the same.
  } finally {
    await dir.close();
  }
}

/** Replaces `path` with `data`, readable by its owner only. */
export function writeFileAtomic(path: string, data: string | Buffer): Promise<void> {
  return writeAtomically(path, async (tmp) => {
    const fh = await open(tmp, 'wx', 0o600);
    try {
      await fh.writeFile(data);
    } finally {
      await fh.close();
    }
  });
}
