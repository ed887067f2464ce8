// The key pool at batch level: rows spread over two keys by their limits; a key the service
// refuses (401) leaves the pool with its reason and the other key does its rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRows, type RunningEmulator } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import {
  activitiesFor,
  configFor,
  fastEmulator,
  readOutput,
  startCsvBatch,
  tempDir,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

const A = { id: 'key-a', key: 'pcds_pool_key_a', secret: 'pcds_pool_secret_a' };
const B = { id: 'key-b', key: 'pcds_pool_key_b', secret: 'pcds_pool_secret_b' };
let emu: RunningEmulator;
const dir = tempDir('pool');
const rows = sampleRows({ rows: 24, withName: true });
const input = writeCsv(dir, 'known.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);

beforeAll(async () => {
  emu = await fastEmulator({ keys: [A, B] });
});
afterAll(async () => {
  await emu?.stop();
});

async function runBatch(keys: object[], name: string) {
  const worker = activitiesFor(
    configFor(emu, { PCDS_API_KEY: '', PCDS_API_SECRET: '', PCDS_API_KEYS: JSON.stringify(keys) }),
  );
  try {
    return await withWorker({ activities: worker.activities }, async ({ client, taskQueue }) => {
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, name, input, {
        window: 6,
        pollIntervalMs: 50,
      });
      const summary = await handle.result();
      const progress = await waitForProgress(client, batchId, () => true);
      const lines = await readOutput(output);
      expect(lines.map((l) => l.row).sort((a, b) => a - b)).toEqual(rows.map((_, i) => i + 1));
      expect(lines.every((l) => l.outcome === 'found')).toBe(true);
      return { summary, progress };
    });
  } finally {
    await worker.close();
  }
}

describe('batch key pool', () => {
  it('spreads rows over the keys in proportion to their limits', async () => {
    const before = { a: emu.stats(A.id), b: emu.stats(B.id) };
    const { progress } = await runBatch(
      [
        { ...A, perMinute: 100 },
        { ...B, perMinute: 200 },
      ],
      'spread',
    );
    expect(progress.pool).toEqual([
      { id: 'key-a', weight: 100, started: 8 },
      { id: 'key-b', weight: 200, started: 16 },
    ]);
    // The service saw the submits on both keys.
    const submits = (s: ReturnType<RunningEmulator['stats']>) => JSON.stringify(s);
    expect(submits(emu.stats(A.id))).not.toBe(submits(before.a));
    expect(submits(emu.stats(B.id))).not.toBe(submits(before.b));
  });

  it('drops a key that answers 401 and does its rows with the other', async () => {
    const wrong = { id: 'key-wrong', key: 'pcds_unknown_key', secret: 'pcds_unknown_secret' };
    const { summary, progress } = await runBatch([wrong, A], 'unauthorized');
    expect(summary).toMatchObject({ done: rows.length, found: rows.length, failed: 0 });
    expect(progress.pool.find((k) => k.id === 'key-wrong')).toMatchObject({
      removed: 'invalid_credentials',
    });
    expect(progress.pool.find((k) => k.id === 'key-a')?.removed).toBeUndefined();
    expect(progress.paused).toBeUndefined();
  });
});
