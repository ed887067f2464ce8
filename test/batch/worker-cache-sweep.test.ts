// A worker built by createWorker sweeps the result cache of its store (first sweep at once here, as asked): entries past
// their time to live are gone, fresh ones stay, and the worker still shuts down at once.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openStoreFromSettings, ResultCache } from '../../src/store/index.js';
import { createWorker } from '../../src/worker.js';
import {
  DEFAULT_WORKFLOWS_PATH,
  installQuietRuntime,
  testEncryptionEnv,
  testTemporalEnv,
  uniqueTaskQueue,
  workflowBundle,
} from '../harness/temporal.js';

const USE = { mode: 'use' } as const;
const found = (requestId: string) => ({
  outcome: 'found' as const,
  requestId,
  status: 'completed',
  result: { n: 1 },
});

it('rule: a worker sweeps expired cache entries once its first sweep is due', async () => {
  installQuietRuntime();
  const dir = mkdtempSync(join(tmpdir(), 'pcds-worker-sweep-'));
  const config = loadConfig({
    ...testTemporalEnv(),
    ...testEncryptionEnv(),
    PCDS_TASK_QUEUE: uniqueTaskQueue('sweep'),
    PCDS_THROTTLE: 'off',
    // Never used: the worker sends nothing here.
    PCDS_API_KEY: 'pk_unused',
    PCDS_API_SECRET: 'sk_unused',
    PCDS_DATA_DIR: dir,
    PCDS_STORE_URL: `sqlite:${join(dir, 'store.sqlite')}`,
  });
  const store = await openStoreFromSettings(config);
  const cache = new ResultCache(store);
  const entries = async () => (await cache.stats()).reduce((n, s) => n + s.entries, 0);
  try {
    const longAgo = Date.now() - 60 * 86_400_000;
    await cache.put('person_enrichment', { email: 'old@example.com' }, USE, found('r1'), longAgo);
    await cache.put('person_newsfeed', { email: 'old@example.com' }, USE, found('r2'), longAgo);
    await cache.put('person_enrichment', { email: 'new@example.com' }, USE, found('r3'));
    expect(await entries()).toBe(3);

    const worker = await createWorker({
      config,
      cacheSweepFirstAfterMs: 0,
      workerOptions: {
        workflowBundle: await workflowBundle(DEFAULT_WORKFLOWS_PATH),
        debugMode: true,
        shutdownGraceTime: '1s',
      },
    });
    const running = worker.run();
    try {
      for (let i = 0; i < 100 && (await entries()) > 1; i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(await entries()).toBe(1);
      expect(await cache.get('person_enrichment', { email: 'new@example.com' }, USE)).toMatchObject(
        { requestId: 'r3' },
      );
    } finally {
      worker.shutdown();
      await running;
    }
  } finally {
    await store.close();
  }
});
