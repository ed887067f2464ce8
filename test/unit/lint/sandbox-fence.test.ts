// The lint fence around the code the workflow sandbox runs (eslint.config.js): a value import of
// Node, of an I/O library or of an I/O folder is refused there, a type import is not, and the
// I/O folders themselves stay free to do I/O. Linted with the project's own configuration.
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

// The fence's rules alone, without type information: the import rules need none.
const eslint = new ESLint({
  ruleFilter: ({ ruleId }) =>
    ruleId === '@typescript-eslint/no-restricted-imports' || ruleId === 'no-restricted-globals',
  overrideConfig: {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: false, project: null } },
  },
});

async function refusals(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result.messages.map((m) => m.ruleId ?? m.message);
}

const FENCE = '@typescript-eslint/no-restricted-imports';

describe('workflow sandbox lint fence', () => {
  // Loading the configuration and its plugins takes seconds on a busy machine: once, up front.
  beforeAll(() => eslint.lintText('', { filePath: 'src/batch/cost.ts' }), 60_000);

  it.each([
    ['src/batch/cost.ts', "import { readFile } from 'node:fs/promises';"],
    ['src/batch/plan.ts', "import { appendResultLines } from '../batch-io/result-writer.js';"],
    ['src/batch/rules.ts', "import { prepareBatch } from '../client/batch-launch.js';"],
    ['src/batch/types.ts', "import { createPcdsClient } from '../client.js';"],
    ['src/batch/rate.ts', "import { BatchStore } from '../store/batch-store.js';"],
    ['src/batch/rate.ts', "import { recordRows } from '../metrics/instruments.js';"],
    ['src/batch/key-pool.ts', "import { Client } from '@temporalio/client';"],
    ['src/contract/usage.ts', "import { loadConfig } from '../config.js';"],
    ['src/workflows/permit-waits.ts', "import { inspectInput } from '../batch-io/row-reader.js';"],
    ['src/throttle/windows.ts', "import { permitGateFromConfig } from '../worker/permit-gate.js';"],
    ['src/throttle/permits.ts', "import { createWorker } from '../worker.js';"],
    [
      'src/workflows/throttle.ts',
      "import { readThrottleStatus } from '../client/throttle-operator.js';",
    ],
    ['src/calls/signals.ts', "import { ServiceHttp } from '../http/service-client.js';"],
    ['src/calls/cache-policy.ts', "import { BatchStore } from '../store/batch-store.js';"],
    ['src/temporal/search-attributes.ts', "import { connectTemporal } from './connection.js';"],
    // Workers share the contract's schemas frozen among workflows: a frozen zod schema cannot parse.
    ['src/workflows/endpoint-call.ts', "import { validateInput } from '../contract/index.js';"],
    ['src/batch/rules.ts', "import { inputAliases } from '../contract/validate.js';"],
    ['src/calls/engine.ts', "import { mcpArgumentProblems } from '../contract/mcp-replies.js';"],
  ])('refuses in %s: %s', async (file, line) => {
    expect(await refusals(file, `${line}\nexport const used = [${nameOf(line)}];\n`)).toEqual([
      FENCE,
    ]);
  });

  it('refuses Node globals in a pure batch file', async () => {
    expect(await refusals('src/batch/plan.ts', 'export const env = process.env;\n')).toEqual([
      'no-restricted-globals',
    ]);
  });

  it.each([
    ['src/batch/flatten.ts', "import type { BatchStore } from '../store/batch-store.js';"],
    ['src/workflows/endpoint-call.ts', "import { fillsCache } from '../calls/cache-policy.js';"],
    ['src/batch/rules.ts', "import { isSystemic } from '../contract/index.js';"],
    ['src/workflows/batch.ts', "import { BatchRules } from '../batch/rules.js';"],
    ['src/workflows/person-search.ts', "import { callStateQuery } from '../calls/signals.js';"],
    ['src/workflows/permit-waits.ts', "import { unthrottled } from '../throttle/permits.js';"],
    ['src/throttle/protocol.ts', "import { RESERVE_UPDATE } from './windows.js';"],
    ['src/workflows/batch-steps.ts', "import { findEndpoint } from '../contract/index.js';"],
  ])('allows in %s: %s', async (file, line) => {
    expect(await refusals(file, `${line}\nexport type Used = typeof ${nameOf(line)};\n`)).toEqual(
      [],
    );
  });

  it('leaves the I/O folders free to do I/O', async () => {
    const line = "import { readFile } from 'node:fs/promises';\nexport const read = readFile;\n";
    expect(await refusals('src/batch-io/row-reader.ts', line)).toEqual([]);
    expect(await refusals('src/client/batch-launch.ts', line)).toEqual([]);
    expect(await refusals('src/worker/permit-gate.ts', line)).toEqual([]);
  });
});

/** The one name an import line brings in. */
function nameOf(line: string): string {
  return /\{\s*(\w+)\s*\}/.exec(line)![1];
}
