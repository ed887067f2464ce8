// Batch rows of person_search read the page each row asks for (its offset, or legacy page), as
// row workflows and as compact rows, compared with the emulator's own GET of that page.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { withWorker } from '../harness/temporal.js';
import { readOutput, sharedBatchEnv, startBatch, tempDir, uniqueBatchId } from './fixtures.js';

const env = sharedBatchEnv();
const dir = tempDir('search-rows');
const ROWS = [
  { query: 'data engineers in Berlin', limit: 5, offset: 20 },
  { query: 'engineer Berlin', limit: 5, page: 3 },
];

async function emulatorPage(query: string, offset: number, limit: number): Promise<unknown[]> {
  const { key, secret } = env.emu.devKey;
  const headers = { 'content-type': 'application/json', 'x-api-key': key, 'x-api-secret': secret };
  const posted = (await (
    await fetch(`${env.emu.url}/person/search`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query, offset, limit }),
    })
  ).json()) as { data: { request_id: string } };
  const url = `${env.emu.url}/person/search?request_id=${posted.data.request_id}&offset=${offset}&limit=${limit}`;
  for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
    const got = (await (await fetch(url, { headers })).json()) as {
      data: { completed?: boolean; results?: unknown[] };
    };
    if (got.data.completed) return got.data.results ?? [];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the emulator never completed the search');
}

it('rule: a person_search row reads its own page, as a row workflow and as a compact row', async () => {
  const expected = await Promise.all([
    emulatorPage(ROWS[0].query, 20, 5),
    emulatorPage(ROWS[1].query, 10, 5),
  ]);
  const first = await emulatorPage(ROWS[0].query, 0, 5);
  expect(expected[0]).not.toEqual(first);
  const input = join(dir, 'rows.jsonl');
  writeFileSync(input, ROWS.map((r) => JSON.stringify(r)).join('\n') + '\n');
  await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
    for (const compact of [false, true]) {
      const batchId = uniqueBatchId(compact ? 'search-compact' : 'search-rows');
      const output = join(dir, `${batchId}.jsonl`);
      const handle = await startBatch(client, taskQueue, {
        batchId,
        endpoint: 'person_search',
        source: { path: input, format: 'jsonl' },
        output,
        pollIntervalMs: 100,
        ...(compact ? { compact: true } : {}),
      });
      expect(await handle.result()).toMatchObject({ state: 'done', done: 2, failed: 0 });
      const lines = (await readOutput(output)).sort((a, b) => a.row - b.row);
      expect(lines.map((l) => l.outcome)).toEqual(['found', 'found']);
      expect(
        lines.map((l) => l.result),
        compact ? 'compact' : 'row workflows',
      ).toEqual(expected);
    }
  });
}, 120_000);
