// `pcds doctor` on the production topology (`npm run test:cluster` only): a `pcds worker` process
// and the doctor, each in a folder of its own, share the Temporal server behind mutual TLS and the
// PostgreSQL store. With the same settings every check passes (mutual TLS, the worker polling and
// reporting into the PostgreSQL store, the same payload key and id secret, the service's key);
// without the client certificate, or on another store, the check that fails names the setting.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLUSTER_STORE_URL } from '../../scripts/temporal-cluster.js';
import type { DoctorReport } from '../../src/doctor/checks.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { testEncryptionEnv, testTemporalEnv, uniqueTaskQueue } from '../harness/temporal.js';
import { runCli, STACK_FRAME } from '../cli/cli-env.js';

if (process.env.PCDS_TEST_CLUSTER !== '1') {
  throw new Error(
    'test/cluster needs the cluster on mutual TLS and PostgreSQL: run it with `npm run test:cluster`',
  );
}

const hosts: string[] = [];
/** A "host": its own working, home, temporary and data folder. */
function host(name: string): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), `pcds-doctor-${name}-`));
  for (const sub of ['home', 'tmp', 'data']) mkdirSync(join(dir, sub));
  hosts.push(dir);
  return { HOME: join(dir, 'home'), TMPDIR: join(dir, 'tmp'), PCDS_DATA_DIR: join(dir, 'data') };
}

let emulator: RunningEmulator;
let worker: ChildProcess | undefined;
let shared: Record<string, string>;
const taskQueue = uniqueTaskQueue('cluster-doctor');

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, limits: { enabled: false } });
  shared = {
    ...testTemporalEnv(),
    PCDS_STORE_URL: CLUSTER_STORE_URL,
    PCDS_TASK_QUEUE: taskQueue,
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEY: emulator.devKey.key,
    PCDS_API_SECRET: emulator.devKey.secret,
    PCDS_THROTTLE: 'off',
    ...testEncryptionEnv(),
  };
  const env = { ...shared, ...host('worker') };
  worker = spawn(process.execPath, [join(projectRoot(), 'bin', 'pcds.mjs'), 'worker'], {
    cwd: env.HOME,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    worker!.stderr!.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes('worker polling task queue')) resolve();
    });
    worker!.once('exit', (code) => reject(new Error(`worker exited (${code}):\n${log}`)));
  });
  // Its first report into the store is written as it starts.
  await new Promise((r) => setTimeout(r, 2_000));
}, 120_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await emulator?.stop();
  for (const d of hosts) rmSync(d, { recursive: true, force: true });
});

async function doctor(env: Record<string, string>) {
  const here = host('doctor');
  const run = await runCli(['doctor', '--json'], { ...env, ...here }, undefined, {
    timeoutMs: 90_000,
  });
  expect(run.stderr).not.toMatch(STACK_FRAME);
  const report = JSON.parse(run.stdout) as DoctorReport;
  return { code: run.code, report, check: (id: string) => report.checks.find((c) => c.id === id) };
}

it('passes on the cluster: mutual TLS, a worker on PostgreSQL, the same store and secrets', async () => {
  const { code, report, check } = await doctor(shared);
  expect(report.checks.filter((c) => c.status === 'fail')).toEqual([]);
  expect(code).toBe(0);
  expect(check('temporal')).toMatchObject({
    status: 'ok',
    detail: expect.stringContaining('mutual TLS'),
  });
  expect(check('store')).toMatchObject({
    status: 'ok',
    detail: expect.stringContaining('postgres'),
  });
  // The store's password never shows: its URL is shown with *** in its place.
  const { password } = new URL(CLUSTER_STORE_URL);
  expect(check('store')!.detail).toContain(':***@');
  expect(JSON.stringify(report)).not.toContain(`:${password}@`);
  expect(check('workers')).toMatchObject({ status: 'ok' });
  expect(check('same_store')).toMatchObject({ status: 'ok' });
  expect(check('same_secrets')).toMatchObject({ status: 'ok' });
  expect(check('service')).toMatchObject({ status: 'ok' });
}, 120_000);

it('names the setting: no client certificate, another store', async () => {
  const { PCDS_TEMPORAL_TLS_CERT: _c, PCDS_TEMPORAL_TLS_KEY: _k, ...noCert } = shared;
  const refused = await doctor(noCert);
  expect(refused.code).toBe(1);
  expect(refused.check('temporal')).toMatchObject({
    status: 'fail',
    detail: expect.stringContaining('PCDS_TEMPORAL_TLS_CERT'),
  });
  const elsewhere = host('other-store');
  const otherStore = await doctor({
    ...shared,
    PCDS_STORE_URL: `sqlite:${join(elsewhere.PCDS_DATA_DIR, 'store.sqlite')}`,
  });
  expect(otherStore.code).toBe(1);
  expect(otherStore.check('same_store')).toMatchObject({
    status: 'fail',
    fix: expect.stringContaining('PCDS_STORE_URL'),
  });
}, 180_000);
