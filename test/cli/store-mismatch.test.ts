// A client on another store than the workers': the batch records its store's identity at start,
// the worker's first look at its rows refuses it, and the batch ends within seconds with
// `store_mismatch` and the setting to fix, in the CLI (start, status) and the typed client
// (status, result). The worker's own store holds nothing of it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPcdsClient, PcdsCallError, type PcdsClient } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import { lazyBatchStore, openStoreFromEnv } from '../../src/store/index.js';
import { connectClient } from '../harness/temporal.js';
import { runCli, startCliEnv, STACK_FRAME, tempDir, type CliEnv } from './cli-env.js';

const dir = tempDir('store-mismatch');
const runId = `${process.pid}-${Date.now().toString(36)}`;
/** "Within seconds" on a loaded machine: a check, not a benchmark. */
const SOON_MS = 20_000;

let cli: CliEnv;
/** The client's own store: not the worker's. */
let otherStoreEnv: Record<string, string>;
beforeAll(async () => {
  cli = await startCliEnv();
  otherStoreEnv = {
    ...cli.env,
    PCDS_STORE_URL: `sqlite:${join(tempDir('client-store'), 'store.sqlite')}`,
  };
});
afterAll(async () => {
  await cli?.stop();
});

const input = () => {
  const path = join(dir, `leads-${Math.random().toString(36).slice(2)}.csv`);
  writeFileSync(
    path,
    `email\n${sampleRows({ rows: 3 })
      .map((r) => r.email)
      .join('\n')}\n`,
  );
  return path;
};

/** The message names the setting, both stores, and who has to change. */
const expectStoreMessage = (message: string) => {
  expect(message).toContain('PCDS_STORE_URL');
  expect(message).toContain(otherStoreEnv.PCDS_STORE_URL.replace(/^sqlite:/, ''));
  expect(message).toContain(cli.env.PCDS_STORE_URL.replace(/^sqlite:/, ''));
  expect(message).toMatch(/on the client .* and on every worker/);
};

it(
  '`pcds batch start` from a CLI on another store ends within seconds with store_mismatch, and `batch status` says the same',
  { timeout: 120_000 },
  async () => {
    const batchId = `mismatch-cli-${runId}`;
    const began = Date.now();
    const start = await runCli(
      [
        'batch',
        'start',
        '--id',
        batchId,
        '-i',
        input(),
        '-o',
        join(dir, 'cli.jsonl'),
        '--no-estimate',
      ],
      otherStoreEnv,
      undefined,
      { timeoutMs: 90_000 },
    );
    expect(Date.now() - began).toBeLessThan(SOON_MS + 10_000);
    expect(start.code).toBe(1);
    expect(start.stderr).toContain('(store_mismatch)');
    expectStoreMessage(start.stderr);
    expect(start.stderr).not.toMatch(STACK_FRAME);
    expect(start.stderr).not.toContain('workflow_failed');

    const status = await runCli(['batch', 'status', batchId], otherStoreEnv);
    expect(status.code).toBe(1);
    expect(status.stderr).toContain('(store_mismatch)');
    expectStoreMessage(status.stderr);
    // The workflow ended for good, failed, within seconds of its start.
    const described = await cli.client.workflow.getHandle(`batch-${batchId}`).describe();
    expect(described.status.name).toBe('FAILED');
    expect(described.closeTime!.getTime() - described.startTime.getTime()).toBeLessThan(SOON_MS);
  },
);

it(
  'a library client on another store: status() and result() throw PcdsCallError store_mismatch within seconds',
  { timeout: 120_000 },
  async () => {
    const { connection } = await connectClient();
    const store = lazyBatchStore(() => openStoreFromEnv(otherStoreEnv));
    let client: PcdsClient | undefined;
    try {
      client = await createPcdsClient({
        connection,
        namespace: cli.env.PCDS_TEMPORAL_NAMESPACE,
        taskQueue: cli.taskQueue,
        store,
      });
      const began = Date.now();
      const batch = await client.startBatch({
        batchId: `mismatch-client-${runId}`,
        rows: sampleRows({ rows: 3 }).map((r) => ({ email: r.email })),
      });
      const failure = await batch.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(Date.now() - began).toBeLessThan(SOON_MS);
      expect(failure).toBeInstanceOf(PcdsCallError);
      expect((failure as PcdsCallError).code).toBe('store_mismatch');
      expectStoreMessage((failure as PcdsCallError).message);
      await expect(batch.status()).rejects.toMatchObject({ code: 'store_mismatch' });
    } finally {
      await client?.close();
      await store.close();
      await connection.close();
    }
  },
);

it(
  'the same batch from a client on the workers’ store runs to its end (the check lets it through)',
  {
    timeout: 120_000,
  },
  async () => {
    const batchId = `same-store-${runId}`;
    const run = await runCli(
      [
        'batch',
        'start',
        '--id',
        batchId,
        '-i',
        input(),
        '-o',
        join(dir, 'same.jsonl'),
        '--no-estimate',
      ],
      cli.env,
      undefined,
      { timeoutMs: 90_000 },
    );
    expect(run.stderr).not.toContain('store_mismatch');
    expect(run.code).toBe(0);
    const status = await runCli(['batch', 'status', batchId, '--json'], cli.env);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: 'done', total: 3, done: 3 });
  },
);
