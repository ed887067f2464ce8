// `pcds emulator` and `pcds emulator sample` run as child processes: the banner's address and dev
// key work, SIGINT stops the server, and the sample file is the seeded dataset's rows. Also the
// commands' answers to bad configuration, which need no running stack.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { sampleRows } from '../../src/emulator/index.js';
import { runCli, spawnCli, STACK_FRAME, tempDir } from './cli-env.js';
import { testEncryptionEnv } from '../harness/temporal.js';

it('pcds emulator --port 0 prints its address and a dev key that works, and stops on SIGINT', async () => {
  const child = spawnCli(['emulator', '--port', '0', '--no-limits'], {});
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (/export PCDS_BASE_URL=.*\n/.test(stdout)) resolve();
      });
      void exited.then((code) => reject(new Error(`exited ${code} before its banner:\n${stderr}`)));
    });
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout)?.[1];
    const key = /API key: +(\S+)/.exec(stdout)?.[1];
    const secret = /API secret: +(\S+)/.exec(stdout)?.[1];
    expect(url, stdout).toBeDefined();
    expect(key).toMatch(/^pcds_dev_/);
    expect(secret).toBeDefined();
    expect(url).not.toMatch(/:0$/);

    const usage = await fetch(`${url}/usage`, {
      headers: { 'X-API-Key': key!, 'X-API-Secret': secret! },
    });
    expect(usage.status).toBe(200);
    expect(((await usage.json()) as { success: boolean }).success).toBe(true);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    await expect(fetch(`${url}/usage`)).rejects.toThrow();
    expect(stderr).toBe('');
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

/** Starts `pcds emulator <args>` and resolves with its banner once the exports line is out. */
async function emulatorBanner(args: string[]): Promise<{ stdout: string; stop(): Promise<void> }> {
  const child = spawnCli(['emulator', ...args], {});
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (/export PCDS_BASE_URL=.*\n/.test(stdout)) resolve();
    });
    void exited.then((code) => reject(new Error(`exited ${code} before its banner:\n${stderr}`)));
  });
  return {
    stdout,
    async stop() {
      child.kill('SIGINT');
      await exited;
    },
  };
}

it('pcds emulator --time-scale 10 says it runs ten times faster and its banner exports what workers need: PCDS_TIME_SCALE=10', async () => {
  const em = await emulatorBanner(['--port', '0', '--time-scale', '10', '--no-limits']);
  try {
    expect(em.stdout).toMatch(/^ {2}pace: +10 times faster than the real service; limits off$/m);
    const line = /^ {2}export (.*)$/m.exec(em.stdout)?.[1];
    const exported = Object.fromEntries(
      (line ?? '').split(' ').map((pair) => pair.split('=') as [string, string]),
    );
    expect(exported).toMatchObject({ PCDS_TIME_SCALE: '10', PCDS_THROTTLE: 'off' });
    // A worker given these lines runs at the emulator's pace.
    const config = loadConfig(exported);
    expect(config).toMatchObject({ PCDS_TIME_SCALE: 10, PCDS_THROTTLE_TIME_SCALE: 10 });
    expect(config.PCDS_POLL_INTERVAL_MS).toBe(100);
  } finally {
    await em.stop();
  }
});

it('pcds emulator --time-scale 0.1, the former way to say ten times faster, is refused with the value meant now', async () => {
  const file = join(tempDir('emulator-scale'), 'emulator.json');
  writeFileSync(file, '{"timeScale": 0.1}');
  const [flag, config, tooFast] = await Promise.all([
    runCli(['emulator', '--time-scale', '0.1'], {}),
    runCli(['emulator', '--config', file], {}),
    runCli(['emulator', '--time-scale', '5000'], {}),
  ]);
  expect(flag.code).toBe(2);
  expect(flag.stderr).toMatch(/--time-scale now means times faster: use 10 instead of 0\.1/);
  expect(config.code).toBe(1);
  expect(config.stderr).toBe(
    'error: invalid emulator options: timeScale now means times faster: use 10 instead of 0.1\n',
  );
  expect(tooFast.stderr).toMatch(/--time-scale must be at most 3600/);
  for (const r of [flag, config, tooFast]) {
    expect(r.stdout).toBe('');
    expect(r.stderr).not.toMatch(STACK_FRAME);
  }
});

it('pcds emulator sample --rows 10 writes a header and the 10 seeded rows', async () => {
  const file = join(tempDir('sample'), 'leads.csv');
  const r = await runCli(['emulator', 'sample', '--rows', '10', '-o', file], {});
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toBe(`wrote 10 rows to ${file}\n`);
  const lines = readFileSync(file, 'utf8').split('\n');
  expect(lines.pop()).toBe('');
  expect(lines).toEqual(['email', ...sampleRows({ rows: 10, seed: 42 }).map((row) => row.email)]);
  for (const email of lines.slice(1)) expect(email).toMatch(/^[^@\s]+@[^@\s]+\.[a-z]+$/);
});

it('pcds emulator sample reports bad shares and unwritable files without a stack', async () => {
  const dir = tempDir('sample-bad');
  const [shares, unwritable] = await Promise.all([
    runCli(
      [
        'emulator',
        'sample',
        '--rows',
        '10',
        '-o',
        join(dir, 'x.csv'),
        '--unknown-share',
        '0.8',
        '--bad-share',
        '0.5',
      ],
      {},
    ),
    runCli(['emulator', 'sample', '--rows', '10', '-o', join(dir, 'no', 'such', 'dir.csv')], {}),
  ]);
  expect(shares.code).toBe(2);
  expect(shares.stderr).toBe('error: --unknown-share plus --bad-share must be at most 1\n');
  expect(unwritable.code).toBe(1);
  expect(unwritable.stderr).toMatch(/^error: ENOENT: no such file or directory/);
  expect(unwritable.stderr).not.toMatch(STACK_FRAME);
});

it('configuration problems and an unreachable Temporal are one line naming them, without a stack', async () => {
  const config = join(tempDir('emulator-config'), 'emulator.json');
  writeFileSync(config, '{"timeScale": "fast"}');
  // With the run's payload key, so the commands get as far as connecting.
  const nowhere = { PCDS_TEMPORAL_ADDRESS: '127.0.0.1:1', ...testEncryptionEnv() };
  const [emulator, webhooks, worker, call, batch, throttle] = await Promise.all([
    runCli(['emulator', '--config', config], {}),
    runCli(['webhooks'], {}),
    runCli(['worker'], nowhere),
    runCli(['call', 'person_enrichment', '--email', 'someone@example.com'], nowhere),
    runCli(['batch', 'status', 'some-batch'], nowhere),
    runCli(['throttle', 'status'], nowhere),
  ]);
  expect(emulator.stderr).toMatch(/^error: invalid emulator options: timeScale .*\n$/);
  expect(webhooks.stderr).toMatch(/^error: webhooks need PCDS_WEBHOOK_PUBLIC_URL.*\n$/);
  for (const r of [worker, call, batch, throttle])
    expect(r.stderr).toMatch(/^error: cannot reach Temporal at 127\.0\.0\.1:1 .*\n$/m);
  for (const r of [emulator, webhooks, worker, call, batch, throttle]) {
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).not.toMatch(STACK_FRAME);
  }
});
