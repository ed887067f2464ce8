// `pcds worker --write-bundle` writes the workflows once; a `pcds worker` process given the file
// (PCDS_WORKFLOW_BUNDLE) loads it instead of bundling, and runs a call to its end. A bundle of
// another release is refused before the worker connects anywhere.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPcdsClient } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import { startCallEnv, type CallEnv } from '../calls/call-env.js';
import {
  connectClient,
  testEncryptionEnv,
  testNamespace,
  uniqueTaskQueue,
} from '../harness/temporal.js';
import { spawnWorkerProcess, workerLog } from '../harness/worker-process.js';
import { runCli } from './cli-env.js';

let env: CallEnv;
const dir = mkdtempSync(join(tmpdir(), 'pcds-worker-bundle-'));

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

it('a worker runs a call on the workflows `pcds worker --write-bundle` wrote', async () => {
  const bundle = join(dir, 'workflows.js');
  const written = await runCli(['worker', '--write-bundle', bundle], testEncryptionEnv());
  expect(written.code).toBe(0);
  expect(written.stderr).toContain(`workflows bundled into ${bundle}`);
  expect(readFileSync(bundle, 'utf8').split('\n', 1)[0]).toMatch(
    /^\/\/ pcds-orchestrator workflow bundle: release \S+, failures encoded$/,
  );

  const taskQueue = uniqueTaskQueue('bundle');
  const { connection } = await connectClient();
  const client = await createPcdsClient({
    connection,
    namespace: testNamespace(),
    taskQueue,
    defaults: { pollIntervalMs: 100, maxWaitMs: 30_000, cache: false },
  });
  let worker: ChildProcess | undefined;
  try {
    worker = await spawnWorkerProcess(taskQueue, {
      PCDS_BASE_URL: env.config.PCDS_BASE_URL,
      PCDS_API_KEYS: JSON.stringify(env.config.keys),
      PCDS_THROTTLE: 'off',
      PCDS_WORKFLOW_BUNDLE: bundle,
    });
    expect(workerLog.get(worker)?.()).toContain(`workflows from ${bundle})`);
    const result = await client.call('person_enrichment', {
      email: sampleRows({ rows: 1 })[0].email,
    });
    expect(result.outcome).toBe('found');
  } finally {
    worker?.kill('SIGTERM');
    if (worker && worker.exitCode === null) await once(worker, 'exit');
    await client.close();
    await connection.close();
  }
});

it('pcds worker refuses a bundle of another release before it connects, saying how to fix it', async () => {
  const bundle = join(dir, 'old.js');
  writeFileSync(bundle, '// pcds-orchestrator workflow bundle: release 0.0.1, failures encoded\n');
  // Nothing listens there: the refusal comes first.
  const r = await runCli(['worker'], {
    ...testEncryptionEnv(),
    PCDS_TEMPORAL_ADDRESS: '127.0.0.1:1',
    PCDS_WORKFLOW_BUNDLE: bundle,
  });
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(
    /^error: PCDS_WORKFLOW_BUNDLE: the bundle was written for release 0\.0\.1/m,
  );
  expect(r.stderr).toContain('pcds worker --write-bundle');
  expect(r.stderr).not.toContain('cannot reach Temporal');
});
