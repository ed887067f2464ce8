// The shared dev server is usable as the project needs it, and a file-backed server keeps
// running workflows across a restart.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TypedSearchAttributes } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  findOrInstallTemporalCli,
  PCDS_SEARCH_ATTRIBUTES,
  PcdsBatchId,
  PcdsRowIndex,
  registerSearchAttributes,
  startDevServer,
  type DevServer,
} from '../../src/temporal/index.js';
import { connectClient, testNamespace, uniqueTaskQueue, withWorker } from '../harness/temporal.js';
import * as activities from './fixtures/activities.js';
import { greeting, isWaitingQuery, releaseSignal, waitForRelease } from './fixtures/workflows.js';

const workflowsPath = resolve(fileURLToPath(import.meta.url), '../fixtures/workflows.ts');

describe('shared dev server', () => {
  it('has the project search attributes with their types', async () => {
    const { client, connection } = await connectClient();
    try {
      const listed = await client.connection.operatorService.listSearchAttributes({
        namespace: testNamespace(),
      });
      expect(listed.customAttributes).toEqual({
        PcdsEndpoint: 2, // INDEXED_VALUE_TYPE_KEYWORD
        PcdsOutcome: 2,
        PcdsBatchId: 2,
        PcdsKeyId: 2,
        PcdsState: 2,
        PcdsRowIndex: 3, // INDEXED_VALUE_TYPE_INT
        PcdsRowsDone: 3,
        PcdsRowsFailed: 3,
      });
    } finally {
      await connection.close();
    }
  });

  it('runs a workflow and its activity end to end, findable by search attribute', async () => {
    await withWorker({ workflowsPath, activities }, async ({ client, taskQueue }) => {
      const batchId = `batch-${taskQueue}`;
      const started = Date.now();
      const result = await client.workflow.execute(greeting, {
        taskQueue,
        workflowId: `greeting-${taskQueue}`,
        args: ['Temporal'],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: PcdsBatchId, value: batchId },
          { key: PcdsRowIndex, value: 7 },
        ]),
      });
      process.stderr.write(`trivial workflow round trip: ${Date.now() - started} ms\n`);
      expect(result).toBe('Hello, Temporal!');

      // Visibility is eventually consistent, even on the dev server.
      const query = `PcdsBatchId = '${batchId}' AND PcdsRowIndex = 7`;
      await expect
        .poll(async () => (await client.workflow.count(query)).count, { timeout: 10_000 })
        .toBe(1);
    });
  });

  it('registers the search attributes on a namespace that lacks them, idempotently', async () => {
    const namespace = uniqueTaskQueue('ns');
    const { client, connection } = await connectClient();
    try {
      await client.connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs('1 day'),
      });
      // A new namespace takes a moment to reach the frontend's namespace cache.
      const first = await retryFor(20_000, () =>
        registerSearchAttributes(client.connection, namespace),
      );
      expect(first.added.sort()).toEqual(PCDS_SEARCH_ATTRIBUTES.map((k) => k.name).sort());
      const listed = await client.connection.operatorService.listSearchAttributes({ namespace });
      for (const key of PCDS_SEARCH_ATTRIBUTES) {
        expect(listed.customAttributes[key.name], key.name).toBeDefined();
      }
      expect(await registerSearchAttributes(client.connection, namespace)).toEqual({ added: [] });
    } finally {
      await connection.close();
    }
  });
});

describe('file-backed dev server', () => {
  let dir: string | undefined;
  let server: DevServer | undefined;

  afterEach(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('keeps a waiting workflow across a restart', async () => {
    dir = await mkdtemp(join(tmpdir(), 'pcds-temporal-'));
    const dbFile = join(dir, 'nested', 'temporal.db'); // the parent folder must be created
    const cliPath = await findOrInstallTemporalCli();
    server = await startDevServer({ cliPath, headless: true, dbFile });
    const address = server.address;
    const port = Number(address.split(':')[1]);
    const taskQueue = uniqueTaskQueue('restart');
    const workflowId = `wait-${taskQueue}`;

    await withWorker({ workflowsPath, activities, address, taskQueue }, async ({ client }) => {
      const handle = await client.workflow.start(waitForRelease, { taskQueue, workflowId });
      // Running, not merely scheduled: its first workflow task has completed.
      await expect.poll(() => handle.query(isWaitingQuery), { timeout: 10_000 }).toBe(true);
    });
    // Every workflow's history is in it: the owner's only, its folder too, its WAL files too.
    const modeOf = async (path: string) => (await stat(path)).mode & 0o777;
    expect(await modeOf(dirname(dbFile))).toBe(0o700);
    for (const file of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`])
      if (existsSync(file)) expect(await modeOf(file), file).toBe(0o600);
    await server.stop();

    // A database an earlier release left readable by others is made private at the next start.
    await chmod(dbFile, 0o644);
    server = await startDevServer({ cliPath, headless: true, dbFile, port });
    expect(await modeOf(dbFile)).toBe(0o600);
    const result = await withWorker(
      { workflowsPath, activities, address, taskQueue },
      async ({ client }) => {
        const handle = client.workflow.getHandle(workflowId);
        await handle.signal(releaseSignal, 'after restart');
        return await handle.result();
      },
    );
    expect(result).toBe('released: after restart');
  });
});

describe('the dev server and its Web UI codec', () => {
  let server: DevServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('gives the UI its codec endpoint, token and all, without putting it on the command line', async () => {
    const token = `codec-${randomBytes(12).toString('hex')}`;
    const endpoint = `http://127.0.0.1:9/${token}`;
    server = await startDevServer({ uiCodecEndpoint: endpoint });
    // What every local user reads in `ps`.
    const cmdline = readFileSync(`/proc/${server.pid}/cmdline`, 'utf8');
    expect(cmdline).toContain('start-dev');
    expect(cmdline).not.toContain(token);
    expect(readFileSync(server.logFile, 'utf8')).not.toContain(token);
    // The UI has it all the same.
    const settings = (await (await fetch(`${server.uiUrl}/api/v1/settings`)).json()) as {
      Codec: { Endpoint: string };
    };
    expect(settings.Codec.Endpoint).toBe(endpoint);
    // The private file it came from (named on the command line) is gone once the server is up.
    const args = cmdline.split('\0');
    const envFile = args[args.indexOf('--env-file') + 1];
    expect(envFile).toMatch(/pcds-temporal-env-/);
    expect(existsSync(envFile)).toBe(false);
  });
});

async function retryFor<T>(timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

describe('a port taken between its pick and the bind', () => {
  it('is named in the error whatever the log ends with, so a start on picked ports is tried again', async () => {
    // Whatever holds the port takes connections and never answers (the client's are closed below).
    const sockets = new Set<Socket>();
    const taken = createServer((socket) => sockets.add(socket));
    await new Promise<void>((ok) => taken.listen(0, '127.0.0.1', ok));
    const port = (taken.address() as AddressInfo).port;
    try {
      // The port is fixed here, so every try finds it taken: the last error is what a caller sees.
      await expect(startDevServer({ port, headless: true })).rejects.toThrow(
        /a port it was given is taken \(address already in use\)/,
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((ok) => taken.close(ok));
    }
  });
});
