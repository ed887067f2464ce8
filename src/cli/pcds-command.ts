// How another shell runs this same `pcds`: banners print commands to paste elsewhere, where
// `npx pcds` only resolves inside the project's folder. `pcds` itself when the PATH leads to this
// one (a global install), else node with the absolute path of its entry point.
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { projectRoot } from '../temporal/cli-binary.js';

const realpath = (path: string): string | undefined => {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
};

/** A word for a POSIX shell: quoted when it holds anything but plain path characters. */
const shellWord = (word: string) =>
  /^[A-Za-z0-9_./:@%+=-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;

/** The first `pcds` on a PATH, resolved (a bin link leads to its entry point). */
function pcdsOnPath(path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'pcds');
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    return realpath(candidate);
  }
  return undefined;
}

/** `pcds`, or `node /abs/path/bin/pcds.mjs`: what runs this pcds from any folder. */
export function pcdsCommand(env: NodeJS.ProcessEnv = process.env): string {
  const entry = join(projectRoot(), 'bin', 'pcds.mjs');
  const resolved = realpath(entry) ?? entry;
  if (pcdsOnPath(env.PATH) === resolved) return 'pcds';
  return `node ${shellWord(resolved)}`;
}
