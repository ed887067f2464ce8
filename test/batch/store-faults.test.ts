// A stored batch whose store fails under it: the embedded SQLite file on a disk that fills up, and
// PostgreSQL out of reach behind a proxy that is cut. The rows wait; once the store is back the
// batch ends with one result per row and one submit per row (none lost, none charged twice).
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchProgressQuery } from '../../src/batch/messages.js';
import { batchWorkflowId } from '../../src/contract/workflow-ids.js';
import { sampleRows, type RunningEmulator } from '../../src/emulator/index.js';
import {
  lazyBatchStore,
  loadFileIntoStore,
  openStoreFromEnv,
  type StoreRoles,
  type LazyBatchStore,
} from '../../src/store/index.js';
import { PcdsBatchId, PcdsEndpoint } from '../../src/temporal/search-attributes.js';
import type { batchWorkflow } from '../../src/workflows/batch.js';
import { BATCH_WORKFLOW_TYPE } from '../../src/temporal/workflow-types.js';
import { withWorker } from '../harness/temporal.js';
import {
  activitiesFor,
  configFor,
  fastEmulator,
  tempDir,
  uniqueBatchId,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

const ROWS = 40;
const rowsCsv = (dir: string, name: string) =>
  writeCsv(
    dir,
    name,
    sampleRows({ rows: ROWS, unknownShare: 0.25 }) as unknown as Record<string, string>[],
    ['email'],
  );

/** Loads the CSV into `store` and starts the batch over it (every row sent: submits = rows). */
async function startStored(
  client: Client,
  taskQueue: string,
  store: StoreRoles,
  input: string,
  compact: boolean,
) {
  const batchId = uniqueBatchId(compact ? 'store-fault-compact' : 'store-fault');
  const source = { path: input, format: 'csv' as const };
  await loadFileIntoStore(store, {
    batchId,
    endpoint: 'person_enrichment',
    source,
    dedupe: false,
  });
  const handle = await client.workflow.start<typeof batchWorkflow>(BATCH_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: batchWorkflowId(batchId),
    args: [
      {
        batchId,
        endpoint: 'person_enrichment',
        source,
        output: `${input}.${batchId}.jsonl`,
        store: true,
        dedupe: false,
        window: 4,
        pollIntervalMs: 100,
        ...(compact ? { compact: true } : {}),
      },
    ],
    typedSearchAttributes: [
      { key: PcdsBatchId, value: batchId },
      { key: PcdsEndpoint, value: 'person_enrichment' },
    ],
  });
  return { batchId, handle };
}

async function storedRows(store: StoreRoles, batchId: string): Promise<number[]> {
  const rows: number[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await store.results(batchId, after !== undefined ? { after } : {});
    rows.push(...page.lines.map((l) => l.row));
    if (page.next === undefined) return rows;
    after = page.next as number;
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs a stored batch, breaks the store mid-batch, checks the rows wait, mends it, checks the end. */
async function batchThroughFault(opts: {
  client: Client;
  taskQueue: string;
  emu: RunningEmulator;
  /** The test's own view of the store (the loader's and the reader's), never broken. */
  store: StoreRoles;
  input: string;
  compact: boolean;
  breakStore(): void;
  mendStore(): void;
  /** How long the store stays broken. */
  outageMs: number;
}) {
  const { client, emu, store } = opts;
  const submitsBefore = emu.stats().jobsSubmitted;
  const { batchId, handle } = await startStored(
    opts.client,
    opts.taskQueue,
    store,
    opts.input,
    opts.compact,
  );
  await waitForProgress(client, batchId, (p) => p.done >= 6, 60_000);
  opts.breakStore();
  let mended = false;
  try {
    // Rows in flight meet the broken store; what was written stays, nothing more is written.
    await pause(Math.min(5_000, opts.outageMs / 3));
    const writtenEarly = (await storedRows(store, batchId)).length;
    await pause(opts.outageMs - Math.min(5_000, opts.outageMs / 3));
    const written = (await storedRows(store, batchId)).length;
    expect(written).toBe(writtenEarly);
    expect(written).toBeLessThan(ROWS);
    const progress = await handle.query(batchProgressQuery);
    expect(progress.failed).toBe(0);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    opts.mendStore();
    mended = true;
  } finally {
    if (!mended) opts.mendStore();
  }
  const summary = await handle.result();
  expect(summary).toMatchObject({ state: 'done', done: ROWS, failed: 0 });
  const rows = await storedRows(store, batchId);
  expect(rows).toHaveLength(ROWS);
  expect(new Set(rows).size).toBe(ROWS);
  expect(emu.stats().jobsSubmitted - submitsBefore).toBe(ROWS);
}

const isRoot = process.getuid?.() === 0;
// The embedded store's part is about SQLite, whichever Temporal server runs the batch: `npm test`
// runs it, and the cluster run (`npm run test:cluster`, which CI runs too) keeps to PostgreSQL's.
const onCluster = process.env.PCDS_TEST_CLUSTER === '1';
const embedded = isRoot && !onCluster;

describe.skipIf(!embedded)('a stored batch on an embedded store whose disk fills up', () => {
  // Needs root: the store's file sits on a 2 MB tmpfs mounted for this file.
  const dir = tempDir('store-full');
  const mnt = join(dir, 'disk');
  const url = `sqlite:${join(mnt, 'store.sqlite')}`;
  const filler = join(mnt, 'filler');
  let emu: RunningEmulator | undefined;
  let worker: ReturnType<typeof activitiesFor> | undefined;
  let view: LazyBatchStore | undefined;

  beforeAll(async () => {
    execFileSync('mkdir', ['-p', mnt]);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mnt]);
    emu = await fastEmulator({ latency: { queuedMs: 50, processingMs: 300 } });
    worker = activitiesFor(configFor(emu, { PCDS_STORE_URL: url }));
    view = lazyBatchStore(() => openStoreFromEnv({ ...process.env, PCDS_STORE_URL: url }));
  });
  afterAll(async () => {
    await worker?.close();
    await view?.close();
    await emu?.stop();
    try {
      execFileSync('umount', [mnt]);
    } catch {
      // Not mounted (beforeAll failed early).
    }
  });

  /** Writes zeros until the disk refuses: every write of the store fails (SQLITE_FULL) after. */
  const fillDisk = () => {
    const fd = openSync(filler, 'w');
    const block = Buffer.alloc(64 * 1024);
    try {
      for (;;) writeSync(fd, block);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      // Down to the last bytes: smaller writes take what a page-sized write could still use.
      for (const size of [4096, 512, 1])
        try {
          for (;;) writeSync(fd, Buffer.alloc(size));
        } catch {
          // Full at this size.
        }
    } finally {
      closeSync(fd);
    }
  };

  for (const compact of [false, true])
    it(`${compact ? 'compact: ' : 'rows as workflows: '}rows wait while the disk is full and end once, each, when it has room`, async () => {
      const input = rowsCsv(dir, `full-${compact}.csv`);
      await withWorker({ activities: worker!.activities }, async ({ client, taskQueue }) =>
        batchThroughFault({
          client,
          taskQueue,
          emu: emu!,
          store: await view!.get(),
          input,
          compact,
          breakStore: fillDisk,
          mendStore: () => rmSync(filler, { force: true }),
          outageMs: 10_000,
        }),
      );
    }, 240_000);
});

/** A TCP proxy that can be cut: open connections are dropped and new ones refused until restored. */
async function startTcpProxy(target: { host: string; port: number }) {
  const open = new Set<Socket>();
  let cut = false;
  const server: Server = createServer((client) => {
    if (cut) return client.destroy();
    const upstream = connect(target.port, target.host);
    open.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      cut = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    restore() {
      cut = false;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const storeUrl = process.env.PCDS_STORE_URL ?? '';
const onPostgres = /^postgres(ql)?:\/\//i.test(storeUrl);

describe.skipIf(!onPostgres)(
  'a stored batch whose PostgreSQL store is out of reach for 45 s (npm run test:cluster)',
  () => {
    /** A worker whose store is reached through a proxy of its own, and an emulator of its own. */
    interface Rig {
      emu: RunningEmulator;
      proxy: Awaited<ReturnType<typeof startTcpProxy>>;
      worker: ReturnType<typeof activitiesFor>;
    }
    const rigs = new Map<boolean, Rig>();
    let view: LazyBatchStore | undefined;
    const dir = tempDir('store-away');

    /** The store's URL through `proxy`. */
    const through = (proxy: { port: number }) => {
      const viaProxy = new URL(storeUrl);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      return viaProxy.toString();
    };
    const direct = () => {
      const url = new URL(storeUrl);
      return { host: url.hostname, port: Number(url.port || 5432) };
    };

    beforeAll(async () => {
      // One rig a mode: the two batches run at once, each through a cut of its own, and each
      // emulator counts the submits of one batch.
      for (const compact of [false, true]) {
        const proxy = await startTcpProxy(direct());
        const emu = await fastEmulator({ latency: { queuedMs: 50, processingMs: 300 } });
        const worker = activitiesFor(configFor(emu, { PCDS_STORE_URL: through(proxy) }));
        rigs.set(compact, { emu, proxy, worker });
      }
      view = lazyBatchStore(() => openStoreFromEnv(process.env));
    });
    afterAll(async () => {
      for (const rig of rigs.values()) {
        await rig.worker.close();
        await rig.proxy.stop();
        await rig.emu.stop();
      }
      await view?.close();
    });

    it('a connection dropped while held between two statements fails the next one, and the process goes on', async () => {
      const proxy = await startTcpProxy(direct());
      const store = await openStoreFromEnv({ ...process.env, PCDS_STORE_URL: through(proxy) });
      try {
        await expect(
          store.db.connection().execute(async (conn) => {
            await sql`select 1`.execute(conn);
            proxy.cut();
            // The drop reaches the held client before its next statement: unheard, it would
            // end the process (vitest reports it as an uncaught exception).
            await new Promise((r) => setTimeout(r, 500));
            await sql`select 1`.execute(conn);
          }),
        ).rejects.toThrow();
        proxy.restore();
        const { rows } = await sql<{ one: number }>`select 1 as one`.execute(store.db);
        expect(rows).toEqual([{ one: 1 }]);
      } finally {
        await store.close();
        await proxy.stop();
      }
    }, 60_000);

    for (const compact of [false, true])
      it.concurrent(
        `${compact ? 'compact: ' : 'rows as workflows: '}rows wait out the cut and end once, each`,
        async () => {
          const rig = rigs.get(compact)!;
          const input = rowsCsv(dir, `away-${compact}.csv`);
          await withWorker({ activities: rig.worker.activities }, async ({ client, taskQueue }) =>
            batchThroughFault({
              client,
              taskQueue,
              emu: rig.emu,
              store: await view!.get(),
              input,
              compact,
              breakStore: () => rig.proxy.cut(),
              mendStore: () => rig.proxy.restore(),
              outageMs: 45_000,
            }),
          );
        },
        300_000,
      );
  },
);

if (!isRoot)
  it.skip('embedded store on a full disk: needs root to mount a small tmpfs', () => undefined);
else if (onCluster) it.skip('embedded store on a full disk: runs under npm test', () => undefined);
if (!onPostgres)
  it.skip('PostgreSQL out of reach: runs under npm run test:cluster (PCDS_STORE_URL=postgres://...)', () =>
    undefined);
