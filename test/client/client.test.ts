// The typed client as a service uses it, against the real dev server and the emulator over HTTP:
// a call, a person search, a search export, and batches started from a file, operated through
// their handles (status, pause, resume, window, cancel) and awaited.
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import {
  PcdsCallError,
  PcdsError,
  PcdsUsageError,
  type BatchHandle,
  type BatchStatus,
  type PcdsClient,
} from '../../src/index.js';
import { readOutput, tempDir, uniqueBatchId, writeCsv } from '../batch/fixtures.js';
import { startCallEnv, TEST_KEYS, withCallWorker, type CallEnv } from '../calls/call-env.js';

let env: CallEnv;
const dir = tempDir('client');
const rows = sampleRows({ rows: 12, withName: true });
const input = writeCsv(dir, 'people.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);
const knownEmail = rows[0].email;

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

async function rejectionOf(p: Promise<unknown>): Promise<PcdsError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PcdsError);
  return err as PcdsError;
}

/** Asks the handle for its status until `until` holds. */
async function statusUntil(
  batch: BatchHandle,
  until: (s: BatchStatus) => boolean,
  timeoutMs = 30_000,
): Promise<BatchStatus> {
  const deadline = Date.now() + timeoutMs;
  let last: BatchStatus | undefined;
  while (Date.now() < deadline) {
    last = await batch.status();
    if (until(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`batch ${batch.batchId} never reached the state; last: ${JSON.stringify(last)}`);
}

const running = (s: BatchStatus) => (s.ended ? undefined : s.progress);

/** A batch over the sample file on the dev key only (the env's other keys fail on purpose). */
const startSampleBatch = (client: PcdsClient, name: string, window: number) => {
  const batchId = uniqueBatchId(name);
  return client.startBatch({
    input,
    output: join(dir, `${batchId}.jsonl`),
    batchId,
    window,
    keyIds: [env.emulator.devKey.id],
  });
};

describe('client', () => {
  it('a call: start, state, find again by id, await; a failure carries its code', async () => {
    await withCallWorker(env, async (client) => {
      const handle = await client.startCall('person_enrichment', { email: knownEmail });
      expect(['submitting', 'polling', 'done']).toContain((await handle.state()).phase);
      const outcome = await handle.result();
      expect(outcome).toMatchObject({ outcome: 'found', status: 'completed' });

      const again = client.getCall(handle.workflowId);
      expect(await again.result()).toEqual(outcome);
      expect(await again.state()).toMatchObject({ phase: 'done', requestId: outcome.requestId });

      const missing = await rejectionOf(client.getCall('call-person_enrichment-none').state());
      expect(missing).toBeInstanceOf(PcdsUsageError);
      expect(missing.code).toBe('call_not_found');

      const failed = await rejectionOf(
        client.call(
          'person_enrichment',
          { email: knownEmail },
          { keyId: TEST_KEYS.wrongSecret.id },
        ),
      );
      expect(failed).toBeInstanceOf(PcdsCallError);
      expect(failed).toMatchObject({ code: 'invalid_credentials', httpStatus: 401 });
      expect(failed.message).not.toContain(knownEmail);
    });
  });

  it('a person search returns its rows, paged up to the maximum', async () => {
    await withCallWorker(env, async (client) => {
      const result = await client.searchPeople(
        { query: 'engineer' },
        { maxResults: 12, pageSize: 5 },
      );
      expect(result).toMatchObject({ returned: 12, pages: 3, stoppedBy: 'max_results' });
      expect(new Set(result.rows.map((r) => JSON.stringify(r))).size).toBe(12);
    });
  });

  it('a search export writes its file and is awaited by its handle; its id is not reused', async () => {
    await withCallWorker(env, async (client) => {
      const exportId = uniqueBatchId('export');
      const output = join(dir, `${exportId}.jsonl`);
      const handle = await client.startSearchExport(
        { query: 'engineer' },
        { maxResults: 15, pageSize: 10, output, exportId },
      );
      expect(handle.exportId).toBe(exportId);
      const summary = await handle.result();
      expect(summary).toMatchObject({ exportId, rows: 15, pages: 2, output });
      const lines = readFileSync(output, 'utf8').trim().split('\n');
      expect(lines.map((l) => (JSON.parse(l) as { row: number }).row)).toEqual(
        Array.from({ length: 15 }, (_, i) => i + 1),
      );
      expect(await client.getSearchExport(exportId).result()).toEqual(summary);

      const again = await rejectionOf(
        client.startSearchExport(
          { query: 'engineer' },
          { maxResults: 5, output: join(dir, `${exportId}-again.jsonl`), exportId },
        ),
      );
      expect(again.code).toBe('export_exists');
    });
  });

  it('a batch: status while running, pause, status shows paused, resume, result', async () => {
    await withCallWorker(env, async (client) => {
      const batch = await startSampleBatch(client, 'client-pause', 1);
      const first = running(await statusUntil(batch, (s) => (running(s)?.done ?? 0) >= 1));
      expect(first).toMatchObject({ batchId: batch.batchId, state: 'running', total: rows.length });

      await batch.pause('maintenance');
      const paused = running(
        await statusUntil(
          batch,
          (s) => running(s)?.state === 'paused' && running(s)?.inFlight === 0,
        ),
      )!;
      expect(paused.paused).toEqual({ code: 'paused_by_operator', message: 'maintenance' });
      expect(paused.done).toBeLessThan(rows.length);
      // Paused means no row starts: the count stays put.
      await new Promise((r) => setTimeout(r, 1000));
      expect(running(await batch.status())).toMatchObject({ state: 'paused', done: paused.done });

      await batch.setWindow(4);
      await batch.resume();
      const summary = await batch.result();
      expect(summary).toMatchObject({
        batchId: batch.batchId,
        state: 'done',
        total: rows.length,
        done: rows.length,
        found: rows.length,
        failed: 0,
      });
      expect(await batch.status()).toEqual({ ended: true, summary });
      const written = (await readOutput(summary.output)).map((l) => l.row);
      expect(written.sort((a, b) => a - b)).toEqual(rows.map((_, i) => i + 1));

      // The same id again is refused; an unknown id is not found.
      const again = await rejectionOf(
        client.startBatch({
          input,
          output: join(dir, `${batch.batchId}-again.jsonl`),
          batchId: batch.batchId,
        }),
      );
      expect(again.code).toBe('batch_exists');
      const missing = await rejectionOf(client.getBatch(uniqueBatchId('none')).status());
      expect(missing.code).toBe('batch_not_found');
    });
  });

  it('a batch cancelled by its handle ends with a summary of what finished', async () => {
    await withCallWorker(env, async (client) => {
      const started = await startSampleBatch(client, 'client-cancel', 1);
      // Found again by id, as a service that did not start it would.
      const batch = client.getBatch(started.batchId);
      await statusUntil(batch, (s) => (running(s)?.done ?? 0) >= 1);
      await batch.cancel();
      const summary = await batch.result();
      expect(summary.state).toBe('cancelled');
      expect(summary.done).toBeGreaterThanOrEqual(1);
      expect(summary.done).toBeLessThan(rows.length);
      // Found by id, its results are read from the store: a line for each row that finished.
      const lines = [];
      for await (const line of batch.results()) lines.push(line);
      expect(lines).toHaveLength(summary.done);
      expect(await started.status()).toEqual({ ended: true, summary });
    });
  });
});
