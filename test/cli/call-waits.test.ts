// `pcds call` never waits in silence: the built CLI starts a call while a worker polls, the worker
// is killed while the service works on the job, and within seconds the command says that no
// worker takes the call's work and how to start one; once a worker is back, the call ends with
// its outcome. Workers are real processes (`dist/worker.js`), the emulator is real HTTP.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sampleRows, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { spawnWorkerProcess } from '../harness/worker-process.js';
import { uniqueTaskQueue } from '../harness/temporal.js';
import { cliEnvOf, spawnCli } from './cli-env.js';

/** "Within seconds" on a loaded machine: a check, not a benchmark. */
const SOON_MS = 25_000;

let emulator: RunningEmulator;
beforeAll(async () => {
  // Jobs take about 20 s: the call is still polling when its worker goes.
  emulator = await startEmulator({
    port: 0,
    latency: { queuedMs: 2_000, processingMs: 18_000 },
    limits: { enabled: false },
  });
});
afterAll(async () => {
  await emulator?.stop();
});

it(
  'a call whose worker stops says why within seconds, again while no worker takes it, and ends once one does',
  { timeout: 180_000 },
  async () => {
    const taskQueue = uniqueTaskQueue('call-waits');
    const env: Record<string, string> = {
      ...cliEnvOf(emulator, taskQueue),
      PCDS_POLL_INTERVAL_MS: '500',
    };
    const workers: ChildProcess[] = [await spawnWorkerProcess(taskQueue, env)];
    const [person] = sampleRows({ rows: 1, seed: 7 });
    const call = spawnCli(
      ['call', 'person_enrichment', '--email', person.email, '--no-cache'],
      env,
    );
    let stderr = '';
    let stdout = '';
    call.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    const seen = (pattern: RegExp, timeoutMs: number, what: string) =>
      new Promise<number>((resolve, reject) => {
        const since = Date.now();
        const check = () => {
          if (pattern.test(stderr)) {
            clearInterval(timer);
            resolve(Date.now() - since);
          }
        };
        const timer = setInterval(check, 100);
        setTimeout(() => {
          clearInterval(timer);
          reject(new Error(`${what} not said within ${timeoutMs} ms; stderr:\n${stderr}`));
        }, timeoutMs);
      });
    call.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const closed = new Promise<number | null>((resolve) => call.once('close', resolve));
    try {
      // Started: its workflow id is printed, and the service is working on the job.
      await seen(/^call-person_enrichment-\S+ \(/m, 30_000, 'the workflow id');
      await new Promise((r) => setTimeout(r, 3_000));
      workers[0].kill('SIGKILL');
      const killedAt = Date.now();
      // Why it waits, within seconds: no worker takes its work (the killed one still shows as a
      // recent poller for a while), with how to start one.
      await seen(/^waiting: .*(no worker|worker)/m, SOON_MS, 'a waiting line');
      expect(Date.now() - killedAt).toBeLessThan(SOON_MS);
      expect(stderr).toMatch(/^waiting: .*`pcds worker`/m);
      expect(stdout).toBe('');
      // A worker again: the call goes on and ends with its outcome.
      workers.push(await spawnWorkerProcess(taskQueue, env));
      const code = await Promise.race([
        closed,
        new Promise<null>((_, reject) =>
          setTimeout(() => reject(new Error(`the call did not end; stderr:\n${stderr}`)), 90_000),
        ),
      ]);
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toMatchObject({ outcome: expect.stringMatching(/found|empty/) });
      expect(stderr).not.toMatch(/^\s+at .+[:(]/m);
      // Nothing personal in what it said while it waited.
      expect(stderr).not.toContain(person.email);
    } finally {
      call.kill('SIGKILL');
      for (const w of workers) w.kill('SIGKILL');
    }
  },
);
