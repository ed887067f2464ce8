// The one folder `pcds mcp` reads and writes in (PCDS_MCP_FILES, default <PCDS_DATA_DIR>/files):
// every path a tool takes resolves inside it, after `..` and symlinks, or is refused with one
// message whether it exists or not, so an assistant can neither probe nor touch other files.
import { lstat, mkdir, open, realpath, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { summaryPathOf } from '../store/outputs.js';
import { checkExportOutput, isCsvOutput, streamPathOf } from '../client/batch-launch.js';
import { PcdsUsageError } from '../client-errors.js';
import { isSoleDefaultToken, type McpCaller, type McpToken } from './access.js';

/** The root's path from the configuration (relative to the working folder when relative). */
export const fileRootDir = (env: { PCDS_MCP_FILES?: string; PCDS_DATA_DIR?: string }): string =>
  resolve(env.PCDS_MCP_FILES || join(env.PCDS_DATA_DIR || '.data', 'files'));

/**
 * The folder a caller's paths resolve in: the root itself over stdio and for the operator's lone
 * `default` token, else the caller's own folder `<root>/<token id>` (made 0700 on first use), so
 * one caller can neither read, probe nor overwrite another's files.
 */
export const callerFilesDir = (
  rootDir: string,
  tokens: readonly McpToken[],
  caller: McpCaller,
): string => (isSoleDefaultToken(tokens) ? rootDir : join(rootDir, caller.tokenId));

/** How an answer names a file outside the caller's root (work started elsewhere, by the operator). */
export const OUTSIDE_FILE_ROOT = '(outside the file root)';

/** The refusal of a path: the same words for a file that exists and one that does not. */
const notInRoot = (role: string) =>
  new PcdsUsageError(
    'path_not_allowed',
    `${role}: not a path inside the file root of pcds mcp (PCDS_MCP_FILES): give a path relative to it`,
  );

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

/**
 * The real path of `abs` (absolute, `..` already folded): of the whole when it exists, else of
 * the deepest part that exists with the rest appended. Something there that cannot be resolved
 * (a link to nowhere or a loop) gives undefined: writing through it could land anywhere.
 */
async function realPathOf(abs: string): Promise<string | undefined> {
  try {
    return await realpath(abs);
  } catch {
    if (await exists(abs)) return undefined;
    const parent = dirname(abs);
    if (parent === abs) return undefined;
    const real = await realPathOf(parent);
    return real === undefined ? undefined : join(real, basename(abs));
  }
}

export class FileRoot {
  private real: Promise<string> | undefined;

  constructor(readonly dir: string) {}

  /** The root's real path; the folder is made (0700) on first use when missing. */
  private root(): Promise<string> {
    this.real ??= mkdir(this.dir, { recursive: true, mode: 0o700 })
      .then(() => realpath(this.dir))
      .catch((err: unknown) => {
        this.real = undefined;
        throw err;
      });
    return this.real;
  }

  /**
   * The real absolute path of `path` (a relative one against the root), which the worker then
   * reads or writes; refused unless it lies inside the root. `role` names the argument.
   */
  async resolve(path: string, role: string): Promise<string> {
    const root = await this.root();
    if (path.includes('\0')) throw notInRoot(role);
    const real = await realPathOf(resolve(root, path));
    if (real === undefined) throw notInRoot(role);
    const rel = relative(root, real);
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel))
      throw notInRoot(role);
    return real;
  }

  /**
   * How an answer names a file the work wrote or read (a real path): relative to the root, as the
   * tools take paths, so no answer shows where the server keeps the root; OUTSIDE_FILE_ROOT for
   * a file elsewhere.
   */
  async shown(path: string): Promise<string> {
    const root = await this.root();
    const rel = relative(root, path);
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel))
      return OUTSIDE_FILE_ROOT;
    return rel;
  }

  /**
   * Claims the files a tool's work will write, before it starts. Without `overwrite` each is
   * created empty (0600) with O_EXCL, which neither opens an existing file nor follows a link,
   * so a file the tool did not create is never truncated; with it, each must resolve inside the
   * root (the launcher then truncates it). Returns an undo that removes what was created, for
   * work that then does not start. Paths come from resolve(): they lie inside the root.
   */
  async claim(paths: readonly string[], overwrite: boolean): Promise<() => Promise<void>> {
    const created: string[] = [];
    const undo = async () => {
      for (const p of created.splice(0)) await rm(p, { force: true });
    };
    for (const p of paths) {
      if (overwrite) {
        // A link in the root that leads out is refused like a path outside.
        await this.resolve(p, 'output');
        continue;
      }
      try {
        await mkdir(dirname(p), { recursive: true, mode: 0o700 });
        await (await open(p, 'wx', 0o600)).close();
        created.push(p);
      } catch (err) {
        await undo();
        if ((err as NodeJS.ErrnoException).code === 'EEXIST')
          throw new PcdsUsageError(
            'output_exists',
            'output: the file exists: choose another output, or pass overwrite to replace it',
          );
        throw new PcdsUsageError(
          'output_unwritable',
          `output: the file cannot be created in the file root (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        );
      }
    }
    return undo;
  }
}

/**
 * What a batch or a search export writes for the output `output` (a real path): the files to
 * claim (the output, a batch's CSV stream, the summary) and the summary's temporary file, which
 * is only checked. A search export writes its JSONL output alone (no CSV stream). The compact
 * mode's journal is not offered through `pcds mcp`.
 */
export function writtenFilesOf(
  output: string,
  kind: 'batch' | 'export' = 'batch',
): { claimed: string[]; checked: string[] } {
  const claimed =
    kind === 'batch' && isCsvOutput(output) ? [output, streamPathOf(output)] : [output];
  const summary = summaryPathOf(output);
  return { claimed: [...claimed, summary], checked: [`${summary}.tmp`] };
}

/**
 * Resolves and claims an output with everything written beside it; the undo as for claim(). A
 * search export's output must end in .jsonl (checked after the path, before any claim).
 */
export async function claimOutput(
  files: FileRoot,
  path: string,
  overwrite: boolean,
  kind: 'batch' | 'export' = 'batch',
): Promise<{ output: string; undo: () => Promise<void> }> {
  const output = await files.resolve(path, 'output');
  if (kind === 'export') checkExportOutput(output);
  const { claimed, checked } = writtenFilesOf(output, kind);
  for (const p of checked) await files.resolve(p, 'output');
  return { output, undo: await files.claim(claimed, overwrite) };
}
