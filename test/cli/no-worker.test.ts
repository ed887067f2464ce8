// Commands that need a worker, run as child processes where none polls: they say so within
// seconds (a warning while starting what was asked, an error where they would only wait), and
// `batch status` of a batch whose worker is gone answers from what the batch last published.
// With a worker polling, none of it is said.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowNotFoundError, type Client, type Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callWorkflowId } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import { PcdsRowsDone } from '../../src/temporal/search-attributes.js';
import {
  connectClient,
  temporalAddress,
  testEncryptionEnv,
  testNamespace,
  uniqueTaskQueue,
} from '../harness/temporal.js';
import { runCli, spawnCli, STACK_FRAME, startCliEnv, tempDir, within } from './cli-env.js';

const dir = tempDir('no-worker');
const runId = `${process.pid}-${Date.now().toString(36)}`;
/** A generous bound for "within seconds" on a loaded machine: a check, not a benchmark. */
const SOON_MS = 20_000;

let client: Client;
let connection: Connection;
beforeAll(async () => {
  ({ client, connection } = await connectClient());
});
afterAll(async () => {
  await connection?.close();
});

/** The child's environment on a task queue no worker polls (the service is never reached). */
const envOn = (taskQueue: string): Record<string, string> => ({
  PCDS_BASE_URL: 'http://127.0.0.1:9',
  PCDS_API_KEY: 'k-unused',
  PCDS_API_SECRET: 's-unused',
  PCDS_TEMPORAL_ADDRESS: temporalAddress(),
  PCDS_TEMPORAL_NAMESPACE: testNamespace(),
  PCDS_TASK_QUEUE: taskQueue,
  ...testEncryptionEnv(),
});

const terminate = (workflowId: string) =>
  client.workflow
    .getHandle(workflowId)
    .terminate('test cleanup')
    .catch(() => undefined);

it(
  '`batch start` with no worker starts the batch and its progress view says no worker polls, within seconds and again while none does',
  { timeout: 120_000 },
  async () => {
    const taskQueue = uniqueTaskQueue('noworker');
    const input = join(dir, 'start.csv');
    writeFileSync(input, 'email\nsomeone@example.com\nsomeone.else@example.com\n');
    const batchId = `noworker-start-${runId}`;
    const began = Date.now();
    const child = spawnCli(
      [
        'batch',
        'start',
        '--id',
        batchId,
        '-i',
        input,
        '-o',
        join(dir, 'start.jsonl'),
        '--no-estimate',
      ],
      envOn(taskQueue),
    );
    let stderr = '';
    let stdout = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    const waiting = `waiting: no worker is polling task queue ${taskQueue}`;
    const times = (n: number) => stderr.split(waiting).length - 1 >= n;
    let saidAgain: () => void = () => undefined;
    const said = new Promise<number>((resolve) => {
      child.stderr?.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (times(1)) resolve(Date.now() - began);
        if (times(2)) saidAgain();
      });
    });
    const again = new Promise<void>((resolve) => (saidAgain = resolve));
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    try {
      const elapsed = await Promise.race([
        said,
        new Promise<number>((_, reject) =>
          setTimeout(() => reject(new Error(`no warning; stderr: ${stderr}`)), SOON_MS),
        ),
      ]);
      expect(elapsed).toBeLessThan(SOON_MS);
      expect(stderr).toContain('start one with `pcds worker`');
      // The batch was started all the same: it runs once a worker polls.
      expect(stdout).toBe(`batch ${batchId}\n`);
      const described = await client.workflow.getHandle(`batch-${batchId}`).describe();
      expect(described.status.name).toBe('RUNNING');
      expect(described.taskQueue).toBe(taskQueue);
      // Beside it: status answers from the description, pause warns, an export reads the store.
      const env = envOn(taskQueue);
      const [status, pause, exported] = await Promise.all([
        runCli(['batch', 'status', batchId], env),
        runCli(['batch', 'pause', batchId], env),
        runCli(['batch', 'export', batchId, '-o', join(dir, 'start-copy.csv')], env),
      ]);
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(
        `(last published progress: no worker is polling task queue ${taskQueue}: start one with \`pcds worker\`)\n  batch of 2 person_enrichment rows\n`,
      );
      expect(pause.code).toBe(0);
      expect(pause.stdout).toBe(`pause sent to batch ${batchId}\n`);
      expect(pause.stderr).toContain(
        `warning: no worker is polling task queue ${taskQueue}: start one with \`pcds worker\`; the batch pauses when one does`,
      );
      // Its rows are in the store: an export needs no worker, and marks them still to come.
      expect(exported.code).toBe(0);
      const copy = readFileSync(join(dir, 'start-copy.csv'), 'utf8').trim().split('\n');
      expect(copy).toHaveLength(3);
      expect(copy.slice(1).every((line) => line.includes('pending'))).toBe(true);
      for (const r of [status, pause, exported]) expect(r.stderr).not.toMatch(STACK_FRAME);
      // While no worker polls, the view keeps saying so (every 30 s).
      await Promise.race([
        again,
        new Promise<void>((_, reject) =>
          setTimeout(
            () => reject(new Error(`said once only; stderr: ${stderr}`)),
            30_000 + SOON_MS,
          ),
        ),
      ]);
    } finally {
      // Ctrl-C leaves the view at once (the batch goes on).
      const leftAt = Date.now();
      child.kill('SIGINT');
      await closed;
      expect(Date.now() - leftAt).toBeLessThan(SOON_MS);
      await terminate(`batch-${batchId}`);
    }
    expect(stderr).not.toMatch(STACK_FRAME);
  },
);

it(
  '`call` with no worker refuses within seconds and starts nothing; with --no-wait it starts the call and warns',
  { timeout: 60_000 },
  async () => {
    const taskQueue = uniqueTaskQueue('noworker');
    const env = envOn(taskQueue);
    const began = Date.now();
    const refused = await runCli(
      ['call', 'person_enrichment', '--email', 'someone@example.com', '--id', `refused-${runId}`],
      env,
    );
    expect(Date.now() - began).toBeLessThan(SOON_MS);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^error: no worker is polling task queue ${taskQueue}: start one with \`pcds worker\` \\(nothing was started`,
      ),
    );
    expect(refused.stderr).not.toMatch(STACK_FRAME);
    expect(refused.stdout).toBe('');
    await expect(
      client.workflow.getHandle(callWorkflowId('person_enrichment', `refused-${runId}`)).describe(),
    ).rejects.toBeInstanceOf(WorkflowNotFoundError);

    const queued = await runCli(
      ['call', 'person_enrichment', '--email', 'someone@example.com', '--no-wait'],
      env,
    );
    expect(queued.code).toBe(0);
    expect(queued.stderr).toContain(
      `warning: no worker is polling task queue ${taskQueue}: start one with \`pcds worker\`; the call is started`,
    );
    const { workflowId } = JSON.parse(queued.stdout) as { workflowId: string };
    try {
      expect((await client.workflow.getHandle(workflowId).describe()).status.name).toBe('RUNNING');
    } finally {
      await terminate(workflowId);
    }
  },
);

it(
  '`batch status` of a batch whose worker is gone answers within seconds with its last published progress',
  { timeout: 180_000 },
  async () => {
    // Slow jobs: the batch is still running when its worker goes.
    const cli = await startCliEnv({ latency: { queuedMs: 200, processingMs: 1_500 } });
    const batchId = `worker-gone-${runId}`;
    const input = join(dir, 'gone.csv');
    const emails = sampleRows({ rows: 60 }).map((r) => r.email);
    writeFileSync(input, `email\n${emails.join('\n')}\n`);
    const handle = client.workflow.getHandle(`batch-${batchId}`);
    let stopped = false;
    try {
      const started = await runCli(
        ['batch', 'start', '--id', batchId, '-i', input, '-o', join(dir, 'gone.jsonl')].concat([
          '--window',
          '2',
          '--detach',
          '--no-estimate',
          // Its rows are sent (the result cache could answer them before the worker goes).
          '--no-cache',
        ]),
        cli.env,
        undefined,
        { timeoutMs: 30_000 },
      );
      expect(started.code).toBe(0);
      // A worker polls: no warning at start.
      expect(started.stderr).not.toContain('no worker');
      // The batch publishes its counters at most every 10 s: wait for some rows done.
      let done = 0;
      const deadline = Date.now() + 90_000;
      while (done < 1 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 1_000));
        done = (await handle.describe()).typedSearchAttributes.get(PcdsRowsDone) ?? 0;
      }
      expect(done).toBeGreaterThan(0);
      // Stopped once: a stop that hangs fails here, naming it, not again in `finally`.
      stopped = true;
      await within(60_000, 'stopping the worker', cli.stop());
      const published = (await handle.describe()).typedSearchAttributes.get(PcdsRowsDone);

      const began = Date.now();
      const status = await runCli(['batch', 'status', batchId], cli.env, undefined, {
        timeoutMs: 30_000,
      });
      expect(Date.now() - began).toBeLessThan(SOON_MS);
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(
        new RegExp(
          `^batch ${batchId} running: ${published} rows done, \\d+ failed \\(last published progress: (no worker is polling task queue ${cli.taskQueue}: start one with \`pcds worker\`|no worker answered the progress query in time)\\)\n  batch of 60 person_enrichment rows\n`,
        ),
      );
      const json = await runCli(['batch', 'status', batchId, '--json'], cli.env, undefined, {
        timeoutMs: 30_000,
      });
      expect(JSON.parse(json.stdout)).toMatchObject({
        lastPublished: { batchId, done: published, taskQueue: cli.taskQueue },
      });
    } finally {
      if (!stopped) await cli.stop();
      await terminate(`batch-${batchId}`);
    }
  },
);

it(
  '`batch start --dry-run`, and the credit check of a start, answer within seconds with no worker: the credits are unknown, and why',
  { timeout: 180_000 },
  async () => {
    const taskQueue = uniqueTaskQueue('noworker-plan');
    const input = join(dir, 'plan.csv');
    writeFileSync(input, 'email\nsomeone@example.com\nsomeone.else@example.com\n');
    // A key of this run: its throttle is new, so nothing but a worker on this queue could answer.
    const keyId = `plan-${runId}`;
    const vars = {
      ...envOn(taskQueue),
      PCDS_API_KEYS: JSON.stringify([{ id: keyId, key: 'k-unused', secret: 's-unused' }]),
      PCDS_STORE_URL: `sqlite:${join(dir, 'plan-store.sqlite')}`,
    };
    const unknown = `available credits: unknown (no worker is polling task queue ${taskQueue}`;
    let began = Date.now();
    const plan = await runCli(
      ['batch', 'start', '-i', input, '-o', join(dir, 'plan.jsonl'), '--keys', keyId, '--dry-run'],
      vars,
      undefined,
      { timeoutMs: 60_000 },
    );
    expect(Date.now() - began).toBeLessThan(SOON_MS);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(unknown);
    expect(plan.stdout).toContain('GET /usage waits for a permit of the shared throttle');
    expect(plan.stdout).toContain('dry run: nothing started');
    expect(plan.stderr).not.toMatch(STACK_FRAME);

    const batchId = `noworker-plan-${runId}`;
    began = Date.now();
    const start = await runCli(
      ['batch', 'start', '--id', batchId, '-i', input, '-o', join(dir, 'plan-start.jsonl')].concat([
        '--keys',
        keyId,
        '--detach',
      ]),
      vars,
      undefined,
      { timeoutMs: 60_000 },
    );
    try {
      expect(Date.now() - began).toBeLessThan(SOON_MS);
      expect(start.code, start.stderr).toBe(0);
      expect(start.stderr).toContain(unknown);
      expect(start.stdout).toBe(`batch ${batchId}\n`);
    } finally {
      await terminate(`batch-${batchId}`);
    }
  },
);

it(
  'with a worker polling, `batch start` says nothing of workers and its progress view ends with the summary',
  { timeout: 120_000 },
  async () => {
    const cli = await startCliEnv();
    try {
      const batchId = `watched-${runId}`;
      const input = join(dir, 'watched.csv');
      const emails = sampleRows({ rows: 4 }).map((r) => r.email);
      writeFileSync(input, `email\n${emails.join('\n')}\n`);
      const watched = await runCli(
        ['batch', 'start', '--id', batchId, '-i', input, '-o', join(dir, 'watched.jsonl')].concat([
          '--no-estimate',
        ]),
        cli.env,
      );
      expect(watched.code).toBe(0);
      expect(watched.stderr).not.toContain('no worker');
      expect(watched.stderr).toMatch(new RegExp(`batch ${batchId} done: 4 of 4 rows`));
    } finally {
      await cli.stop();
    }
  },
);
