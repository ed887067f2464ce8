// A compact row whose store refuses the write of its accepted job (a full disk, a database gone
// for a moment) after the service took the job: the attempt keeps the job and records it once the
// store writes again, so the row ends with its result and one submit, never "outcome unknown".
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatchRowActivities } from '../../src/activities/batch-row.js';
import type { ActivityDeps } from '../../src/activities/deps.js';
import type { JournalEntry } from '../../src/batch/journal.js';
import { sampleRows, type RunningEmulator } from '../../src/emulator/index.js';
import { createServiceClients } from '../../src/http/service-clients.js';
import { unthrottled } from '../../src/throttle/permits.js';
import {
  lazyBatchStore,
  loadFileIntoStore,
  openStoreFromEnv,
  type LazyBatchStore,
} from '../../src/store/index.js';
import { configFor, fastEmulator, tempDir, uniqueBatchId, writeCsv } from './fixtures.js';

describe('a compact row whose store cannot record its accepted job for a while', () => {
  const dir = tempDir('row-held');
  let emu: RunningEmulator | undefined;
  let store: LazyBatchStore | undefined;
  beforeAll(async () => {
    emu = await fastEmulator();
    store = lazyBatchStore(() =>
      openStoreFromEnv({ ...process.env, PCDS_STORE_URL: `sqlite:${dir}/store.sqlite` }),
    );
  });
  afterAll(async () => {
    await store?.close();
    await emu?.stop();
  });

  it('records it once the store writes again and ends with its result, sent once', async () => {
    const real = await store!.get();
    const batchId = uniqueBatchId('row-held');
    const { email } = sampleRows({ rows: 1, unknownShare: 0 })[0];
    const input = writeCsv(dir, 'one.csv', [{ email }], ['email']);
    await loadFileIntoStore(real, {
      batchId,
      endpoint: 'person_enrichment',
      source: { path: input, format: 'csv' },
      dedupe: false,
    });
    // The store refuses the first two writes of the accepted job, as a full disk does.
    let refused = 0;
    const flaky = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === 'recordRow')
          return async (id: string, entry: JournalEntry) => {
            if (entry.state === 'accepted' && refused < 2) {
              refused += 1;
              throw new Error('SQLITE_FULL: database or disk is full');
            }
            return target.recordRow(id, entry);
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const config = configFor(emu!);
    const clients = createServiceClients(config);
    const deps: ActivityDeps = {
      config,
      clients,
      permits: unthrottled,
      store: {
        get: () => Promise.resolve(flaky),
        cache: () => store!.cache(),
        close: () => Promise.resolve(),
      },
    };
    try {
      const submitsBefore = emu!.stats().jobsSubmitted;
      const end = await new MockActivityEnvironment().run(
        createBatchRowActivities(deps).runBatchRow,
        {
          batchId,
          endpoint: 'person_enrichment',
          keyId: clients.resolveKeyId(),
          row: 1,
          key: {},
          params: { email },
          store: true,
          pollIntervalMs: 50,
        },
      );
      expect(refused).toBe(2);
      expect(end).not.toHaveProperty('failure');
      expect(emu!.stats().jobsSubmitted - submitsBefore).toBe(1);
      expect((await real.rowEntry(batchId, 1))?.state).toBe('accepted');
      const { lines } = await real.results(batchId);
      expect(lines.map((l) => [l.row, l.outcome])).toEqual([[1, 'found']]);
    } finally {
      await clients.close();
    }
  }, 60_000);
});
