// Files replaced whole: written beside the target, synced, then renamed over it, so a reader never
// sees half a file and a crash leaves either the old file or the new one. Results are private:
// every file made here is 0600 and every folder made for it 0700.
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Mode of the files the project writes (results, summaries, journals, indexes, exports). */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of the folders it creates for them; folders that exist keep theirs. */
export const PRIVATE_DIR_MODE = 0o700;

/**
 * Creates `dir` (and its missing parents) readable by its owner only. The mode is
 * passed explicitly: a process umask can only take bits away from it, never add any.
 */
export async function makePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Runs `write` on a temporary file beside `target`, syncs it, and renames it over `target`. The
 * temporary file is made (empty, 0600) before `write` runs, so whatever opens it for writing
 * keeps that mode, and the file renamed into place is 0600 whatever the old one was.
 */
export async function writeAtomically(
  target: string,
  write: (tmp: string) => Promise<void>,
): Promise<void> {
  await makePrivateDir(dirname(target));
  const tmp = join(
    dirname(target),
    `.${basename(target)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    await (await open(tmp, 'wx', PRIVATE_FILE_MODE)).close();
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
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(data);
    } finally {
      await fh.close();
    }
  });
}
