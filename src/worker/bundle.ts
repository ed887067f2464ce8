// A worker's workflows bundled ahead of time. A worker bundles its workflow code when it starts
// (about 3 s of CPU); `pcds worker --write-bundle <file>` does it once (in an image build, or before
// starting many workers) and PCDS_WORKFLOW_BUNDLE=<file> makes each worker load that file instead.
// The file names the release that wrote it and whether failures are encoded (as with encryption
// on): a worker of another release or setting refuses it, as its workflows would not be the code
// its activities and replay histories expect.
import { closeSync, openSync, readSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { ConfigError } from '../config-error.js';
import type { DataConverter } from '@temporalio/common';
import { FAILURE_CONVERTER_PATH } from '../temporal/data-converter.js';
import { packageVersion } from '../version.js';

/** Our modules: `.ts` when run from source, `.js` from the built package. */
const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** The workflows module. */
export const WORKFLOWS_PATH = fileURLToPath(new URL(`../workflows/index${ext}`, import.meta.url));

/**
 * Modules that build the contract's input schemas (zod) as they load, and whose schemas no
 * workflow parses with: the endpoint catalogue (with the inputs and parameters it reads) and the
 * MCP tools' arguments. A worker thread loads them once and its workflows share them; otherwise
 * each workflow evaluates them again as it starts (with rows as workflows, about a third of a
 * worker's workflow time). What they export is frozen (Temporal's reusable context does it), and
 * a frozen zod schema cannot parse: a module whose schemas run in workflow code (envelope.ts, for
 * webhook deliveries) stays out of this list and is loaded by each workflow as before.
 */
export const SHARED_WORKFLOW_MODULES: readonly string[] = ['catalogue', 'mcp'].map((name) =>
  fileURLToPath(new URL(`../contract/${name}${ext}`, import.meta.url)),
);

const MARK = '// pcds-orchestrator workflow bundle: ';

/** What a bundle's first line says: the release, and whether workflow failures are encoded. */
function stamp(encodedFailures: boolean): string {
  return `release ${packageVersion()}, failures ${encodedFailures ? 'encoded' : 'plain'}`;
}

/**
 * Bundles the workflows as a worker would at start and writes them to `path`: with encryption on
 * (`encodedFailures`), its failure converter is bundled in (temporal/data-converter.ts). No key is
 * needed to write one.
 */
export async function writeWorkflowBundle(path: string, encodedFailures: boolean): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    preloadModules: [...SHARED_WORKFLOW_MODULES],
    ...(encodedFailures ? { failureConverterPath: FAILURE_CONVERTER_PATH } : {}),
    logger: new DefaultLogger('WARN'),
  });
  writeFileSync(path, `${MARK}${stamp(encodedFailures)}\n${code}`);
}

/**
 * Worker.create's workflowBundle for a file writeWorkflowBundle wrote, checked first: a file that
 * is missing, is not such a bundle, or was written by another release or for the other encryption
 * setting is refused with the reason.
 */
export function workflowBundleFile(
  path: string,
  dataConverter: DataConverter,
): { codePath: string } {
  let head: string;
  try {
    const fd = openSync(path, 'r');
    try {
      const buf = Buffer.alloc(200);
      head = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError(`PCDS_WORKFLOW_BUNDLE: cannot read the file (${code})`);
  }
  const firstLine = head.split('\n', 1)[0] ?? '';
  if (!firstLine.startsWith(MARK))
    throw new ConfigError(
      'PCDS_WORKFLOW_BUNDLE: the file is not a workflow bundle written by `pcds worker --write-bundle`',
    );
  // Only what the stamp's own grammar allows is repeated in an error, never the file's content.
  const written = /^release ([0-9A-Za-z.+-]{1,40}), failures (encoded|plain)$/.exec(
    firstLine.slice(MARK.length).trim(),
  );
  if (!written)
    throw new ConfigError(
      "PCDS_WORKFLOW_BUNDLE: the bundle's first line is damaged: write it again with `pcds worker --write-bundle`",
    );
  const wanted = stamp(dataConverter.failureConverterPath !== undefined);
  if (written[0] !== wanted)
    throw new ConfigError(
      `PCDS_WORKFLOW_BUNDLE: the bundle was written for release ${written[1]} with failures ${written[2]}, this worker needs ${wanted.replace(', ', ' with ')}: write it again with this release's \`pcds worker --write-bundle\` and the same PCDS_ENCRYPTION`,
    );
  return { codePath: path };
}
