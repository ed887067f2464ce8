// `pcds dev` run as the user runs it (a child process with its own Temporal dev server on free
// ports): --time-scale says in its banner that it is not the real pace and its throttle runs the
// scaled windows; --no-limits turns off the emulator's limits and the workers' throttle;
// --no-worker starts none, and a separate `pcds worker` with the printed settings runs calls; a
// taken port is named with the flag that moves it (`pcds webhooks` too); the demo prints no Web UI
// link without --keep.
import { execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { freeListenPort } from '../harness/ports.js';
import { temporalAddress, testEncryptionEnv, testNamespace } from '../harness/temporal.js';
import { childEnv, runCli, spawnCli, tempDir, type CliResult } from './cli-env.js';

const execFileAsync = promisify(execFile);

const BANNER_END = 'Ctrl-C stops everything';
const dirs: string[] = [];
const children: ChildProcess[] = [];

/** What every `pcds dev` here gets: nothing of our shell but the Temporal CLI to use. */
const baseEnv = (): Record<string, string> =>
  process.env.PCDS_TEMPORAL_CLI ? { PCDS_TEMPORAL_CLI: process.env.PCDS_TEMPORAL_CLI } : {};

async function portFlags(): Promise<string[]> {
  const flags = [
    '--temporal-port',
    '--ui-port',
    '--emulator-port',
    '--codec-port',
    '--webhook-port',
  ];
  const out: string[] = [];
  for (const flag of flags) out.push(flag, String(await freeListenPort()));
  return out;
}

interface RunningDev {
  child: ChildProcess;
  stdout: string;
  /** The `export K=V` lines of the banner. */
  exports: Record<string, string>;
}

/** Starts `pcds dev <args>` and waits for its banner. */
async function startDev(args: string[], dir = tempDir('dev')): Promise<RunningDev> {
  dirs.push(dir);
  const child = spawnCli(['dev', '--data-dir', dir, ...(await portFlags()), ...args], baseEnv());
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes(BANNER_END)) resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`pcds dev exited (${code}) before its banner:\n${stdout}\n${stderr}`)),
    );
  });
  const exports: Record<string, string> = {};
  for (const [, k, v] of stdout.matchAll(/^export (PCDS_[A-Z_]+)=(.*)$/gm)) exports[k] = v;
  return { child, stdout, exports };
}

async function stopDev(dev: RunningDev): Promise<void> {
  if (dev.child.exitCode !== null) return;
  const exited = once(dev.child, 'exit');
  dev.child.kill('SIGINT');
  await exited;
}

afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function expectFound(r: CliResult): void {
  expect(r.stderr).not.toMatch(/error/i);
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed' });
}

describe('pcds dev --time-scale', () => {
  it('says it is not the real pace, and a throttle started at the real pace takes windows 60 times shorter', async () => {
    const dir = tempDir('dev-pace');
    const throttleWindows = async (env: Record<string, string>) => {
      const status = await runCli(['throttle', 'status', '--json'], env);
      expect(status.code).toBe(0);
      const [key] = JSON.parse(status.stdout) as {
        keyId: string;
        status?: { settings: { minuteMs: number; hourMs: number } };
      }[];
      return key.status?.settings;
    };
    // First at the real pace, in the same data folder: the key's throttle starts with real windows.
    const real = await startDev([], dir);
    try {
      expect(real.stdout).toMatch(/^Pace: +the real service's/m);
      expect(real.stdout).not.toMatch(/not the real/);
      expect(real.exports).toMatchObject({ PCDS_TIME_SCALE: '1', PCDS_THROTTLE: 'on' });
      expectFound(
        await runCli(['call', 'person_enrichment', '--email', 'ada@example.com'], real.exports),
      );
      // The call the banner suggests runs in another shell, outside the project's folder.
      const suggested = /^then e\.g\.: (.+)$/m.exec(real.stdout)?.[1];
      expect(suggested).toMatch(/^(pcds|node \/\S+\/bin\/pcds\.mjs) call person_enrichment /);
      const elsewhere = await execFileAsync('sh', ['-c', suggested!], {
        cwd: tempDir('elsewhere'),
        env: childEnv(real.exports),
      });
      expect(JSON.parse(elsewhere.stdout)).toMatchObject({ status: 'completed' });
      expect(await throttleWindows(real.exports)).toMatchObject({
        minuteMs: 60_000,
        hourMs: 3_600_000,
      });
    } finally {
      await stopDev(real);
    }
    const dev = await startDev(['--time-scale', '60'], dir);
    try {
      expect(dev.stdout).toMatch(
        /^Pace: +not the real service's pace \(emulator at 60x\): a minute lasts 1 s;/m,
      );
      expect(dev.exports).toMatchObject({ PCDS_TIME_SCALE: '60', PCDS_THROTTLE: 'on' });
      const email = 'ada.lovelace@example.com';
      expectFound(await runCli(['call', 'person_enrichment', '--email', email], dev.exports));
      // The same key's throttle now runs the scaled windows: a minute of 1 s, an hour of 60 s.
      expect(await throttleWindows(dev.exports)).toMatchObject({ minuteMs: 1_000, hourMs: 60_000 });
    } finally {
      await stopDev(dev);
    }
  }, 180_000);

  it('is refused by a worker whose PCDS_BASE_URL is not the local emulator', async () => {
    const r = await runCli(['worker'], {
      ...baseEnv(),
      PCDS_TIME_SCALE: '60',
      PCDS_BASE_URL: 'https://api.example.com',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: PCDS_TIME_SCALE is only for the bundled emulator/);
  });
});

describe('pcds dev --no-limits --no-worker', () => {
  it('turns limits off, runs no worker, and a separate pcds worker with the printed settings runs a call', async () => {
    const dev = await startDev(['--no-limits', '--no-worker']);
    let worker: ChildProcess | undefined;
    const connection = await Connection.connect({ address: dev.exports.PCDS_TEMPORAL_ADDRESS });
    try {
      expect(dev.stdout).toMatch(/^Pace: +not the real service's pace \(rate limits off\)/m);
      expect(dev.stdout).toMatch(/^Worker: +none \(--no-worker\)$/m);
      expect(dev.exports).toMatchObject({ PCDS_THROTTLE: 'off', PCDS_TIME_SCALE: '1' });
      // The emulator's limit (100 a minute) is off: 120 requests in a row are all answered.
      const statuses = await Promise.all(
        Array.from({ length: 120 }, () =>
          fetch(`${dev.exports.PCDS_BASE_URL}/usage`, {
            headers: {
              'X-API-Key': dev.exports.PCDS_API_KEY,
              'X-API-Secret': dev.exports.PCDS_API_SECRET,
            },
          }).then((res) => res.status),
        ),
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);

      const pollers = async () =>
        (
          await connection.workflowService.describeTaskQueue({
            namespace: dev.exports.PCDS_TEMPORAL_NAMESPACE,
            taskQueue: { name: dev.exports.PCDS_TASK_QUEUE },
            taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          })
        ).pollers ?? [];
      expect(dev.exports.PCDS_TASK_QUEUE).toBe('pcds');
      expect(await pollers()).toEqual([]);

      worker = spawnCli(['worker'], { ...baseEnv(), ...dev.exports });
      children.push(worker);
      // A call refuses (no_worker) when nothing polls within its grace: wait for the worker first.
      await vi.waitFor(async () => expect((await pollers()).length).toBeGreaterThan(0), {
        timeout: 60_000,
        interval: 500,
      });
      const email = 'grace.hopper@example.com';
      expectFound(await runCli(['call', 'person_enrichment', '--email', email], dev.exports));
      // The worker read PCDS_THROTTLE=off: the call took no permit, so no throttle was started.
      await expect(
        connection.workflowService.describeWorkflowExecution({
          namespace: dev.exports.PCDS_TEMPORAL_NAMESPACE,
          execution: { workflowId: 'throttle-default' },
        }),
      ).rejects.toThrow(/not found/i);
    } finally {
      if (worker && worker.exitCode === null) {
        const exited = once(worker, 'exit');
        worker.kill('SIGINT');
        await exited;
      }
      await connection.close();
      await stopDev(dev);
    }
  }, 180_000);
});

describe('pcds demo', () => {
  it('prints no Web UI link it is about to stop, and says --keep keeps them', async () => {
    const dir = tempDir('demo');
    dirs.push(dir);
    const r = await runCli(['demo', '--output', join(dir, 'out.jsonl'), ...(await portFlags())], {
      ...baseEnv(),
      PCDS_DATA_DIR: dir,
    });
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/run it with --keep to look at the batch there/);
    // The summary names no address of the Web UI that stops on the next line.
    expect(r.stdout).not.toMatch(/https?:\/\//);
    expect(r.stderr).toMatch(/stopping Temporal/);
  }, 180_000);
});

describe('a taken port', () => {
  let held: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => held?.close(r));
    held = undefined;
  });

  it.each([
    ['--webhook-port', 'webhook receiver'],
    ['--temporal-port', 'Temporal frontend (gRPC)'],
    ['--metrics-port', 'metrics'],
  ])('is named with %s, and nothing starts', async (flag, what) => {
    held = createServer();
    await new Promise<void>((r) => held!.listen(0, '127.0.0.1', r));
    const port = (held.address() as { port: number }).port;
    const dir = tempDir('dev-port');
    dirs.push(dir);
    const args = await portFlags();
    const at = args.indexOf(flag);
    if (at >= 0) args[at + 1] = String(port);
    else args.push(flag, String(port));
    const r = await runCli(['dev', '--data-dir', dir, ...args], {
      ...baseEnv(),
      PCDS_METRICS_HOST: '127.0.0.1',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error: port ${port} (${what}) is in use: pick another with ${flag} (port_in_use)\n`,
    );
    expect(r.stdout).toBe('');
    expect(existsSync(join(dir, 'temporal.db'))).toBe(false);
  });

  it('is named with --port by pcds webhooks', async () => {
    held = createServer();
    await new Promise<void>((r) => held!.listen(0, '127.0.0.1', r));
    const port = (held.address() as { port: number }).port;
    const r = await runCli(['webhooks', '--port', String(port)], {
      PCDS_TEMPORAL_ADDRESS: temporalAddress(),
      PCDS_TEMPORAL_NAMESPACE: testNamespace(),
      PCDS_WEBHOOK_HOST: '127.0.0.1',
      PCDS_WEBHOOK_PUBLIC_URL: 'http://127.0.0.1:1',
      PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
      PCDS_WEBHOOK_SECRET: 'a-test-secret-of-enough-length',
      ...testEncryptionEnv(),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: port ${port} (webhook receiver) is in use: pick another with --port or PCDS_WEBHOOK_PORT (port_in_use)\n`,
    );
  });
});
