// Results are their owner's only: a results file opened for writing is made 0600 even when it
// existed with a wider mode (an old output given with --overwrite, a file made by hand).
import type { FileHandle } from 'node:fs/promises';
import { PRIVATE_FILE_MODE } from './atomic-write.js';

/**
 * Takes group and other access off an open file, through its handle (not its path, which could
 * name another file by now). Leaves a file that is already private as it is.
 */
export async function makeOpenFilePrivate(fh: FileHandle): Promise<void> {
  const { mode } = await fh.stat();
  if ((mode & 0o077) !== 0) await fh.chmod(PRIVATE_FILE_MODE);
}
