// `pcds doctor` through the built CLI: on a good setup (the test server, the emulator, a worker
// and its store) every check passes and it exits 0; each broken setting fails its own check with
// the setting named and a fix, and the command exits 1: another store than the workers', no id
// secret, a key file others can read, another payload key than the workers', no worker on the
// queue, TLS to a plain server. `--json` is the same report for scripts; the client's doctor()
// gives it too. No secret value is ever printed.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPcdsClient } from '../../src/client.js';
import type { DoctorReport } from '../../src/doctor/checks.js';
import { connectClient } from '../harness/temporal.js';
import { runCli, startCliEnv, STACK_FRAME, tempDir, type CliEnv } from './cli-env.js';

let cli: CliEnv;
beforeAll(async () => {
  cli = await startCliEnv();
  // The worker reports itself into its store as it starts.
  await new Promise((r) => setTimeout(r, 1_500));
});
afterAll(async () => {
  await cli?.stop();
});

const doctor = async (env: Record<string, string>) => {
  const run = await runCli(['doctor', '--json'], env, undefined, { timeoutMs: 90_000 });
  expect(run.stderr).not.toMatch(STACK_FRAME);
  const report = JSON.parse(run.stdout) as DoctorReport;
  for (const secret of [env.PCDS_ENCRYPTION_KEY, env.PCDS_ID_SECRET, cli.env.PCDS_API_SECRET])
    if (secret) expect(run.stdout).not.toContain(secret);
  return { code: run.code, report, status: (id: string) => report.checks.find((c) => c.id === id) };
};

it(
  'passes on a good setup, each check named, and the text report says so',
  { timeout: 120_000 },
  async () => {
    const { code, report, status } = await doctor(cli.env);
    expect(report.checks.filter((c) => c.status === 'fail')).toEqual([]);
    expect(code).toBe(0);
    expect(report.ok).toBe(true);
    expect(status('temporal')).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining('plain'),
    });
    expect(status('workers')).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining(`polling task queue ${cli.taskQueue}`),
    });
    expect(status('store')).toMatchObject({ status: 'ok' });
    expect(status('same_store')).toMatchObject({ status: 'ok' });
    expect(status('same_secrets')).toMatchObject({ status: 'ok' });
    expect(status('encryption_key')).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/^payload key k1 \(fingerprint [0-9a-f]{16}\)/),
    });
    expect(status('id_secret')).toMatchObject({ status: 'ok' });
    expect(status('service')).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining('credits'),
    });
    expect(status('webhooks')).toMatchObject({ status: 'skip' });
    const text = await runCli(['doctor'], cli.env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ok {3}temporal: /m);
    expect(text.stdout).toMatch(/no problem found\n$/);
  },
);

it('names each broken setting with its fix, and exits 1', { timeout: 300_000 }, async () => {
  const dir = tempDir('doctor');
  // Another store than the worker's: the worker polling never reported into it.
  const otherStore = await doctor({
    ...cli.env,
    PCDS_STORE_URL: `sqlite:${join(dir, 'other.sqlite')}`,
  });
  expect(otherStore.code).toBe(1);
  expect(otherStore.status('same_store')).toMatchObject({
    status: 'fail',
    fix: expect.stringContaining('PCDS_STORE_URL'),
  });

  // No id secret.
  const { PCDS_ID_SECRET: _secret, ...noSecret } = cli.env;
  const missing = await doctor(noSecret);
  expect(missing.code).toBe(1);
  expect(missing.status('id_secret')).toMatchObject({
    status: 'fail',
    fix: expect.stringContaining('PCDS_ID_SECRET'),
  });

  // The payload key in a file others can read.
  const keyFile = join(dir, 'encryption-key');
  writeFileSync(keyFile, cli.env.PCDS_ENCRYPTION_KEY);
  chmodSync(keyFile, 0o644);
  const { PCDS_ENCRYPTION_KEY: _key, ...noKey } = cli.env;
  const readable = await doctor({ ...noKey, PCDS_ENCRYPTION_KEY_FILE: keyFile });
  expect(readable.code).toBe(1);
  expect(readable.status('encryption_key')).toMatchObject({
    status: 'fail',
    detail: expect.stringContaining('readable by others (mode 644)'),
    fix: `chmod 600 ${keyFile} (its owner only)`,
  });

  // Another payload key than the workers': told by key id and fingerprint, never by value.
  const otherKey = await doctor({
    ...cli.env,
    PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  });
  expect(otherKey.code).toBe(1);
  expect(otherKey.status('same_secrets')).toMatchObject({
    status: 'fail',
    detail: expect.stringMatching(
      /seals payloads with key k1 \(fingerprint [0-9a-f]{16}\), this process with key k1 \(fingerprint [0-9a-f]{16}\)/,
    ),
  });

  // No worker on the task queue.
  const noWorker = await doctor({ ...cli.env, PCDS_TASK_QUEUE: `${cli.taskQueue}-nobody` });
  expect(noWorker.code).toBe(1);
  expect(noWorker.status('workers')).toMatchObject({
    status: 'fail',
    fix: expect.stringContaining(`PCDS_TASK_QUEUE=${cli.taskQueue}-nobody`),
  });

  // Webhooks whose public URL reaches no receiver.
  const hooks = await doctor({
    ...cli.env,
    PCDS_WEBHOOK_PUBLIC_URL: 'http://127.0.0.1:9',
    PCDS_WEBHOOK_SECRET: 'a-webhook-secret-of-the-test',
    PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
  });
  expect(hooks.code).toBe(1);
  expect(hooks.status('webhooks')).toMatchObject({
    status: 'fail',
    detail: expect.stringContaining('nothing answers at http://127.0.0.1:9/healthz'),
    fix: expect.stringContaining('PCDS_WEBHOOK_PUBLIC_URL'),
  });

  // TLS to a plain server.
  const tls = await doctor({ ...cli.env, PCDS_TEMPORAL_TLS: 'true' });
  expect(tls.code).toBe(1);
  expect(tls.status('temporal')).toMatchObject({
    status: 'fail',
    detail: expect.stringContaining('TLS'),
  });
});

it("the client's doctor() gives the same report", { timeout: 120_000 }, async () => {
  const { connection } = await connectClient();
  const client = await createPcdsClient({ connection, taskQueue: cli.taskQueue });
  try {
    const report = await client.doctor(cli.env);
    expect(report.ok).toBe(true);
    expect(report.checks.map((c) => c.id)).toContain('same_store');
  } finally {
    await client.close();
    await connection.close();
  }
});
