// A worker process with PCDS_METRICS_PORT serves /metrics: scraped over HTTP before and after a
// small batch on the real emulator, its counters move by exactly what the emulator saw (requests,
// submits, credits) and what the batch's summary says (rows by outcome); the SDK's own metrics
// are there; no label holds an email or a secret. Then a 429 and a throttle wait, and webhook
// deliveries accepted and refused.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  sampleRows,
  startEmulator,
  type EmulatorOptionsInput,
  type RunningEmulator,
} from '../../src/emulator/index.js';
import { METRIC_DEFS, METRICS, SDK_METRICS, sampleNamesOf } from '../../src/metrics/catalogue.js';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { freeListenPort } from '../harness/ports.js';
import {
  connectClient,
  temporalAddress,
  testEncryptionEnv,
  testNamespace,
  uniqueTaskQueue,
} from '../harness/temporal.js';
import { spawnWorkerProcess } from '../harness/worker-process.js';
import { readOutput, startCsvBatch, tempDir, writeCsv } from '../batch/fixtures.js';
import { pcdsClient } from '../throttle/env.js';
import { moved, Scrape } from './scrape.js';

const M = METRICS;
const ENDPOINT = '/person/enrichment';

interface MetricsWorker {
  child: ChildProcess;
  url: string;
  taskQueue: string;
  keyId: string;
  stop(): Promise<void>;
}

let keyCounter = 0;

/** A worker process on the emulator's dev key (with a label of its own) serving /metrics. */
async function startMetricsWorker(
  emu: RunningEmulator,
  env: Record<string, string> = {},
): Promise<MetricsWorker> {
  const port = await freeListenPort();
  const taskQueue = uniqueTaskQueue('metrics');
  const keyId = `metrics-${process.pid}-${Date.now().toString(36)}-${++keyCounter}`;
  const child = await spawnWorkerProcess(taskQueue, {
    PCDS_BASE_URL: emu.url,
    PCDS_API_KEYS: JSON.stringify([{ ...emu.devKey, id: keyId }]),
    PCDS_THROTTLE: 'on',
    PCDS_METRICS_PORT: String(port),
    PCDS_METRICS_HOST: '127.0.0.1',
    PCDS_METRICS_USAGE_INTERVAL_MS: '300',
    ...testEncryptionEnv(),
    ...env,
  });
  return {
    child,
    url: `http://127.0.0.1:${port}/metrics`,
    taskQueue,
    keyId,
    async stop() {
      // A clean stop; a worker that has not stopped 15 s later is killed (nothing here depends
      // on how it ends, and a hook must not outlast its timeout on a loaded machine).
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited.finally(() => clearTimeout(timer));
    },
  };
}

/** Scrapes until `ready` holds (the credit sampler reads /usage on its own schedule). */
const scrapeUntil = (url: string, ready: (s: Scrape) => boolean) =>
  vi.waitUntil(
    async () => {
      const scrape = await Scrape.of(url);
      return ready(scrape) ? scrape : false;
    },
    { timeout: 20_000, interval: 200 },
  );

/**
 * An emulator and a metrics worker on it, started before the describe block's tests and stopped
 * after them. Read `emu` and `worker` inside tests.
 */
function metricsEnv(
  emulator: EmulatorOptionsInput,
  workerEnv: () => Promise<Record<string, string>> = () => Promise.resolve({}),
): { readonly emu: RunningEmulator; readonly worker: MetricsWorker } {
  const env: { emu?: RunningEmulator; worker?: MetricsWorker } = {};
  beforeAll(async () => {
    env.emu = await startEmulator({ port: 0, ...emulator });
    env.worker = await startMetricsWorker(env.emu, await workerEnv());
  });
  afterAll(async () => {
    await env.worker?.stop();
    await env.emu?.stop();
  });
  return env as { emu: RunningEmulator; worker: MetricsWorker };
}

const emuRequests = (emu: RunningEmulator, what: string) => emu.stats().requests[what] ?? 0;

describe('a small batch', () => {
  const env = metricsEnv({
    latency: { queuedMs: 20, processingMs: 200 },
    limits: { enabled: true, perMinute: 100, perHour: 1000 },
  });

  it(
    'moves the counters by exactly what was sent, charged and written',
    { timeout: 90_000 },
    async () => {
      const { emu, worker } = env;
      const known = sampleRows({ rows: 3 });
      const rows = [
        { email: known[0].email },
        { email: 'nobody-1@unknown.pcds.dev' },
        { email: known[1].email },
        { email: 'not-an-email' },
        { email: 'nobody-2@unknown.pcds.dev' },
        { email: known[2].email },
      ];
      const dir = tempDir('metrics');
      const input = writeCsv(dir, 'rows.csv', rows, ['email']);
      const creditsName = M.creditsUsed.name;
      const key = { key: worker.keyId };
      // The worker's first /usage read gives the credit gauge its starting figure.
      const before = await scrapeUntil(worker.url, (s) => s.has(creditsName));
      const emuBefore = emu.stats();

      const { client, connection } = await connectClient();
      try {
        const { handle, output } = await startCsvBatch(client, worker.taskQueue, 'metrics', input, {
          window: 6,
          pollIntervalMs: 100,
        });
        const summary = await handle.result();
        expect(summary).toMatchObject({ state: 'done', total: 6, found: 3, empty: 2, failed: 1 });
        expect(await readOutput(output)).toHaveLength(6);

        const charged = emu.stats().creditsCharged - emuBefore.creditsCharged;
        expect(charged).toBeGreaterThan(0);
        // Waits for the sampler's read after the last charge.
        const after = await scrapeUntil(
          worker.url,
          (s) => s.sum(creditsName, key) - before.sum(creditsName, key) === charged,
        );

        const submits =
          emuRequests(emu, `POST ${ENDPOINT}`) - (emuBefore.requests[`POST ${ENDPOINT}`] ?? 0);
        const polls =
          emuRequests(emu, `GET ${ENDPOINT}`) - (emuBefore.requests[`GET ${ENDPOINT}`] ?? 0);
        expect(submits).toBe(5); // the invalid row is never sent
        const req = (labels: Record<string, string>) =>
          moved(before, after, M.requests.name, { ...key, endpoint: ENDPOINT, ...labels });
        expect(req({ kind: 'submit', status: '202', transport: 'http' })).toBe(submits);
        expect(req({ kind: 'submit' })).toBe(submits);
        expect(req({ kind: 'poll' })).toBe(polls);
        expect(moved(before, after, M.rateLimited.name, key)).toBe(0);
        expect(emu.stats().rateLimited).toBe(0);

        // Every request passed the throttle: one permit each, each with its wait recorded.
        const permits = (kind: string) =>
          moved(before, after, M.permitsGranted.name, { ...key, kind });
        expect(permits('submit')).toBe(submits);
        expect(permits('poll')).toBe(polls);
        expect(
          moved(before, after, `${M.throttleWait.name}_count`, { ...key, kind: 'submit' }),
        ).toBe(submits);

        // The wait histogram has the catalogue's buckets, not the SDK's defaults.
        const bounds = after.samples
          .filter((x) => x.name === `${M.throttleWait.name}_bucket`)
          .map((x) => x.labels.le);
        expect(new Set(bounds)).toEqual(new Set([...M.throttleWait.buckets.map(String), '+Inf']));

        const rowsMoved = (outcome: string) => moved(before, after, M.rows.name, { outcome });
        expect(rowsMoved('found')).toBe(summary.found);
        expect(rowsMoved('empty')).toBe(summary.empty);
        expect(rowsMoved('failed')).toBe(summary.failed);
        expect(rowsMoved('skipped')).toBe(0);

        // The SDK's own runtime metrics are served on the same port, with the labels the
        // dashboard groups by; every pcds_ metric served is one of the catalogue's.
        for (const def of SDK_METRICS) {
          const samples = after.samples.filter((s) => s.name === sampleNamesOf(def)[0]);
          expect(samples.length, def.name).toBeGreaterThan(0);
          for (const label of def.labels)
            expect(
              samples.some((s) => label in s.labels),
              `${def.name} ${label}`,
            ).toBe(true);
        }
        const catalogued = new Set(METRIC_DEFS.flatMap(sampleNamesOf));
        for (const n of after.names()) if (n.startsWith('pcds_')) expect(catalogued).toContain(n);

        // Nothing personal or secret in any label.
        for (const r of rows) expect(after.text).not.toContain(r.email);
        expect(after.text).not.toContain(emu.devKey.secret);
        expect(after.text).not.toContain(emu.devKey.key);
      } finally {
        await connection.close();
      }
    },
  );
});

describe('a key the service limits harder than the worker believes', () => {
  const env = metricsEnv(
    {
      timeScale: 20,
      latency: { queuedMs: 0, processingMs: 2_000 },
      limits: { enabled: true, perMinute: 3, perHour: 1000 },
    },
    () =>
      Promise.resolve({
        PCDS_THROTTLE_TIME_SCALE: '20',
        PCDS_RATE_PER_MINUTE: '100',
        PCDS_RATE_PER_HOUR: '1000',
        PCDS_METRICS_USAGE_INTERVAL_MS: '600000',
      }),
  );

  it('counts each 429 and the throttle waits that follow it', { timeout: 90_000 }, async () => {
    const { emu, worker } = env;
    const before = await Scrape.of(worker.url);
    const emuBefore = emu.stats().rateLimited;
    const { client, close } = await pcdsClient(worker.taskQueue, {
      pollIntervalMs: 200,
      maxWaitMs: 60_000,
    });
    try {
      const emails = sampleRows({ rows: 6 }).map((r) => r.email);
      const outs = await Promise.all(
        emails.map((email) => client.call('person_enrichment', { email })),
      );
      for (const out of outs) expect(out.outcome).toBe('found');
      const after = await Scrape.of(worker.url);
      const seen429 = emu.stats().rateLimited - emuBefore;
      expect(seen429).toBeGreaterThan(0);
      const key = { key: worker.keyId };
      expect(moved(before, after, M.rateLimited.name, key)).toBe(seen429);
      expect(moved(before, after, M.requests.name, { ...key, status: '429' })).toBe(seen429);
      // A 429 closes the key: later permits waited for it to open again.
      expect(moved(before, after, `${M.throttleWait.name}_sum`, key)).toBeGreaterThan(0);
      const waitedLong =
        moved(before, after, `${M.throttleWait.name}_count`, key) -
        moved(before, after, `${M.throttleWait.name}_bucket`, { ...key, le: '0.25' });
      expect(waitedLong).toBeGreaterThan(0);
    } finally {
      await close();
    }
  });
});

describe('webhook deliveries', () => {
  let hooks = '';
  const env = metricsEnv(
    {
      allowLoopbackCallbacks: true,
      latency: { queuedMs: 0, processingMs: 300 },
      limits: { enabled: false },
    },
    async () => {
      const port = await freeListenPort();
      hooks = `http://127.0.0.1:${port}`;
      return {
        PCDS_THROTTLE: 'off',
        PCDS_WEBHOOK_PUBLIC_URL: hooks,
        PCDS_WEBHOOK_PORT: String(port),
        PCDS_WEBHOOK_HOST: '127.0.0.1',
        PCDS_WEBHOOK_SECRET: 'metrics-test-webhook-secret',
        PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
        PCDS_METRICS_USAGE_INTERVAL_MS: '600000',
      };
    },
  );

  it('counts a delivery accepted and one refused, by reason', { timeout: 60_000 }, async () => {
    const { emu, worker } = env;
    const name = M.webhookDeliveries.name;
    const before = await Scrape.of(worker.url);
    const { client, close } = await pcdsClient(worker.taskQueue, {
      maxWaitMs: 30_000,
      webhookFallbackPollMs: 30_000,
    });
    try {
      const out = await client.call(
        'person_enrichment',
        { email: sampleRows({ rows: 1 })[0].email },
        { webhook: true },
      );
      expect(out.outcome).toBe('found');
      const forged = await fetch(`${hooks}/hooks/k1/some-workflow/not-a-valid-token`, {
        method: 'POST',
        body: '{}',
      });
      expect(forged.status).toBe(404);
      const after = await Scrape.of(worker.url);
      expect(moved(before, after, name, { result: 'accepted', reason: 'signalled' })).toBe(
        emu.stats().webhookDeliveries,
      );
      expect(moved(before, after, name, { result: 'accepted' })).toBe(1);
      expect(moved(before, after, name, { result: 'refused', reason: 'bad_token' })).toBe(1);
      expect(moved(before, after, name, { result: 'refused' })).toBe(1);
    } finally {
      await close();
    }
  });
});

/** `pcds <args>` from source; resolves once `ready` appears in its stderr, or with its exit. */
async function spawnPcds(
  args: string[],
  env: Record<string, string>,
  ready: string,
): Promise<{ child: ChildProcess; log: () => string; exited: boolean }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: projectRoot(),
    env: {
      ...process.env,
      PCDS_TEMPORAL_ADDRESS: temporalAddress(),
      PCDS_TEMPORAL_NAMESPACE: testNamespace(),
      ...testEncryptionEnv(),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const exited = await new Promise<boolean>((resolve) => {
    child.stderr.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes(ready)) resolve(false);
    });
    child.once('exit', () => resolve(true));
  });
  return { child, log: () => log, exited };
}

it("serves the standalone receiver's delivery counters, and it still stops on SIGTERM", async () => {
  const [metricsPort, hooksPort] = [await freeListenPort(), await freeListenPort()];
  const { child, exited, log } = await spawnPcds(
    ['webhooks'],
    {
      PCDS_METRICS_PORT: String(metricsPort),
      PCDS_METRICS_HOST: '127.0.0.1',
      PCDS_WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${hooksPort}`,
      PCDS_WEBHOOK_PORT: String(hooksPort),
      PCDS_WEBHOOK_HOST: '127.0.0.1',
      PCDS_WEBHOOK_SECRET: 'metrics-test-webhook-secret',
      PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
    },
    'webhook receiver listening',
  );
  expect(exited, log()).toBe(false);
  const url = `http://127.0.0.1:${metricsPort}/metrics`;
  try {
    const forged = await fetch(`http://127.0.0.1:${hooksPort}/hooks/k1/wf/not-a-token`, {
      method: 'POST',
      body: '{}',
    });
    expect(forged.status).toBe(404);
    const scrape = await Scrape.of(url);
    expect(scrape.sum(M.webhookDeliveries.name, { result: 'refused', reason: 'bad_token' })).toBe(
      1,
    );
  } finally {
    child.kill('SIGTERM');
  }
  const [code] = (await once(child, 'exit')) as [number | null];
  expect(code).toBe(0);
});

it('stops the worker with the reason when the metrics port is taken', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as AddressInfo;
  try {
    const { child, exited, log } = await spawnPcds(
      ['worker'],
      {
        PCDS_API_KEY: 'metrics-test-key',
        PCDS_API_SECRET: 'metrics-test-secret',
        PCDS_METRICS_PORT: String(port),
        PCDS_METRICS_HOST: '127.0.0.1',
      },
      'worker polling task queue',
    );
    if (!exited) {
      child.kill('SIGTERM');
      throw new Error(`the worker started on a taken metrics port:\n${log()}`);
    }
    expect(child.exitCode).not.toBe(0);
    expect(log()).toContain(`PCDS_METRICS_PORT: cannot serve metrics on 127.0.0.1:${port}`);
    expect(log()).not.toContain('metrics-test-secret');
  } finally {
    taken.close();
  }
});

/** Whether an HTTP GET of /metrics at `host:port` gets an answer (a refused connection: no). */
async function answers(host: string, port: number): Promise<boolean> {
  try {
    return (await fetch(`http://${host}:${port}/metrics`, { signal: AbortSignal.timeout(5_000) }))
      .ok;
  } catch {
    return false;
  }
}

it.each([
  // 127.0.0.2 is loopback too on Linux, but a socket bound to 127.0.0.1 does not take it.
  { host: undefined, served: '127.0.0.1', wider: false },
  { host: '0.0.0.0', served: '0.0.0.0', wider: true },
])(
  'serves metrics on 127.0.0.1 unless PCDS_METRICS_HOST says otherwise ($host)',
  // A worker started from source takes a while on a loaded machine.
  { timeout: 150_000 },
  async ({ host, served, wider }) => {
    expect(process.env.PCDS_METRICS_HOST, 'the test sets the host itself').toBeUndefined();
    const port = await freeListenPort();
    const { child, exited, log } = await spawnPcds(
      ['worker'],
      {
        PCDS_API_KEY: 'metrics-test-key',
        PCDS_API_SECRET: 'metrics-test-secret',
        PCDS_METRICS_PORT: String(port),
        ...(host ? { PCDS_METRICS_HOST: host } : {}),
      },
      'metrics served on',
    );
    expect(exited, log()).toBe(false);
    try {
      expect(log()).toContain(`metrics served on http://${served}:${port}/metrics`);
      expect(await answers('127.0.0.1', port)).toBe(true);
      expect(await answers('127.0.0.2', port)).toBe(wider);
    } finally {
      // Only the listener matters here: no graceful stop of a worker still bundling its workflows.
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    }
  },
);
