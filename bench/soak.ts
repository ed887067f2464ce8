// A batch that runs for (scaled) hours on one key under 100/minute and 1,000/hour, with the
// events real batches meet: the hourly budget runs dry every hour, a worker is replaced mid-run by
// one with changed workflow code (a deploy), the Temporal server is killed and comes back after
// 45 s (real seconds: it tests Temporal's own heartbeat timeout, which is not scaled), the key is
// disabled and enabled again (401s, then a resume), the output's disk fails for a
// while (then a resume), and the service answers some 503s and drops some connections. Every
// duration is scaled by one factor: the windows (service and throttle), job latency, the
// maximum wait and the poll interval. Prints (does not assert) what decides whether the batch
// kept its promise: rows missing or doubled, submits per row, credits against rows found, rows
// timed out, 429s, and the share of the allowed rate used.
// Run: npx tsx bench/soak.ts [rows] [timeScale]
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { temporalClient } from '../src/temporal/data-converter.js';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { request } from 'undici';
import { prepareBatch, queryProgress, startBatchWorkflow } from '../src/client/batch-launch.js';
import { resumeBatchSignal } from '../src/batch/messages.js';
import type { BatchProgress, ResultLine } from '../src/batch/types.js';
import { loadConfig } from '../src/config.js';
import { benchStore } from './batch-env.js';
import { startEmulator, writeSampleCsv } from '../src/emulator/index.js';
import { startDevServer } from '../src/temporal/index.js';
import { createWorker, type PcdsWorker } from '../src/worker.js';

const ROWS = Number(process.argv[2] ?? 2_000);
/** 50 times faster: a "minute" of 1.2 s, an "hour" of 72 s. */
const SCALE = Number(process.argv[3] ?? 50);
const LIMITS = { perMinute: 100, perHour: 1_000 };
const MINUTE_MS = 60_000 / SCALE;
const HOUR_MS = 3_600_000 / SCALE;
const WINDOW = 50;
const KEY_ID = 'soak';

Runtime.install({ logger: new DefaultLogger('ERROR') });
// On disk, so the server can be killed and started again with its state (an outage).
const serverDir = mkdtempSync(join(tmpdir(), 'pcds-soak-temporal-'));
const dbFile = join(serverDir, 'temporal.db');
let server = await startDevServer({ headless: true, logLevel: 'error', dbFile });
const serverPort = Number(server.address.split(':')[1]);
/** The new code a deploy brings: the same workflows with a patched change. */
const CHANGED_WORKFLOWS = fileURLToPath(new URL('./changed-workflows.ts', import.meta.url));
/** How long the Temporal server stays down: longer than an activity's heartbeat timeout. */
const OUTAGE_MS = 45_000;
const emulator = await startEmulator({
  port: 0,
  timeScale: SCALE,
  // Jobs of about 10 s, as enrichments take (0.2 s at the default scale).
  latency: { queuedMs: 2_000, processingMs: 8_000 },
  limits: { enabled: true, ...LIMITS },
  devKey: { key: 'pcds_soak_key', secret: 'pcds_soak_secret', credits: null },
  faults: { unavailableShare: 0.01, dropConnectionShare: 0.005 },
});
const devKeyId = emulator.devKey.id;
const admin = (method: 'PATCH', path: string, body: unknown) =>
  request(emulator.url + path, {
    method,
    headers: { 'content-type': 'application/json', 'x-admin-token': emulator.adminToken },
    body: JSON.stringify(body),
  }).then((r) => r.body.dump());

const config = loadConfig({
  PCDS_BASE_URL: emulator.url,
  PCDS_API_KEYS: JSON.stringify([{ ...emulator.devKey, id: KEY_ID }]),
  PCDS_THROTTLE: 'on',
  PCDS_THROTTLE_TIME_SCALE: String(SCALE),
  PCDS_RATE_PER_MINUTE: String(LIMITS.perMinute),
  PCDS_RATE_PER_HOUR: String(LIMITS.perHour),
  PCDS_TEMPORAL_ADDRESS: server.address,
  PCDS_TASK_QUEUE: 'soak',
  PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
});
const batchStore = benchStore(config);
const startWorker = async (
  workflowsPath?: string,
): Promise<{ worker: PcdsWorker; running: Promise<void> }> => {
  const worker = await createWorker({
    config,
    store: batchStore,
    connection: await NativeConnection.connect({ address: server.address }),
    ...(workflowsPath ? { workerOptions: { workflowsPath } } : {}),
  });
  return { worker, running: worker.run() };
};

const connection = await Connection.connect({ address: server.address });
const client = temporalClient(connection, config);
let current = await startWorker();
const events: string[] = [];
const started = Date.now();
const at = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
try {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-soak-'));
  const input = join(dir, 'leads.csv');
  await writeSampleCsv(input, { rows: ROWS, unknownShare: 0.2 });
  const output = join(dir, 'out.jsonl');
  const prepared = await prepareBatch({
    input,
    output,
    window: WINDOW,
    batchId: `soak-${Date.now()}`,
    pollIntervalMs: Math.round(1_000 / SCALE),
    maxWaitMs: Math.round((30 * 60_000) / SCALE),
  });
  const handle = await startBatchWorkflow(client, 'soak', prepared, {
    store: await batchStore.get(),
  });
  const progress = async (): Promise<BatchProgress | undefined> =>
    queryProgress(handle).catch(() => undefined);
  const until = async (ok: (p: BatchProgress) => boolean) => {
    for (;;) {
      const p = await progress();
      if (p && ok(p)) return p;
      await sleep(200);
    }
  };
  // The long poll for the result breaks while the server is down: it is asked again.
  const waitForResult = async (): Promise<Awaited<ReturnType<typeof handle.result>>> => {
    for (;;) {
      try {
        return await handle.result();
      } catch (err) {
        if ((err as { code?: unknown }).code !== 14 && (err as Error).name !== 'ServiceError')
          throw err;
        await sleep(1_000);
      }
    }
  };
  const result = waitForResult();
  result.catch(() => undefined);

  // 1. A deploy mid-run: a worker with changed workflow code replaces the old one, and picks up
  // every workflow the old code started.
  await until((p) => p.done >= ROWS * 0.2);
  const old = current;
  current = await startWorker(CHANGED_WORKFLOWS);
  old.worker.shutdown();
  await old.running;
  events.push(`${at()}: worker replaced by one with changed workflow code`);

  // 1b. The Temporal server killed, down for longer than the heartbeat timeout, then back.
  await until((p) => p.done >= ROWS * 0.3);
  process.kill(server.pid, 'SIGKILL');
  await server.stop();
  events.push(`${at()}: Temporal server killed`);
  await sleep(OUTAGE_MS);
  server = await startDevServer({ headless: true, logLevel: 'error', dbFile, port: serverPort });
  events.push(`${at()}: Temporal server back`);

  // 2. The key disabled (401 on submits and polls) for two "minutes", then enabled and resumed.
  await until((p) => p.done >= ROWS * 0.4);
  await admin('PATCH', `/v1/api-keys/${devKeyId}`, { disabled: true });
  events.push(`${at()}: key disabled`);
  await sleep(2 * MINUTE_MS);
  await admin('PATCH', `/v1/api-keys/${devKeyId}`, { disabled: false });
  await handle.signal(resumeBatchSignal);
  events.push(`${at()}: key enabled, batch resumed`);

  // 3. The output's disk fails (every write ENOSPC) until the batch pauses, then recovers.
  await until((p) => p.done >= ROWS * 0.6 && !p.paused);
  renameSync(output, `${output}.kept`);
  symlinkSync('/dev/full', output);
  events.push(`${at()}: output disk full`);
  const paused = await until((p) => p.paused?.code === 'output_unwritable');
  unlinkSync(output);
  renameSync(`${output}.kept`, output);
  await handle.signal(resumeBatchSignal);
  events.push(`${at()}: disk recovered at ${paused.done} rows, batch resumed`);

  const summary = await result;
  const wallMs = Date.now() - started;
  const lines = readFileSync(output, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ResultLine);
  const seen = new Map<number, number>();
  for (const l of lines) seen.set(l.row, (seen.get(l.row) ?? 0) + 1);
  const missing = ROWS - [...seen.keys()].filter((r) => r >= 1 && r <= ROWS).length;
  const doubled = [...seen.values()].filter((n) => n > 1).length;
  const byCode = (code: string) => lines.filter((l) => l.code === code).length;
  const stats = emulator.stats(devKeyId);
  const requests = Object.values(stats.requests).reduce((a, b) => a + b, 0);
  const accepted = requests - stats.rateLimited;
  const boundMs = Math.max(
    Math.floor((accepted - 1) / LIMITS.perMinute) * MINUTE_MS,
    Math.floor((accepted - 1) / LIMITS.perHour) * HOUR_MS,
  );
  const foundRows = lines.filter((l) => l.outcome === 'found').length;
  process.stdout.write(
    [
      `soak: ${ROWS} rows on one key, ${LIMITS.perMinute}/minute and ${LIMITS.perHour}/hour, ${SCALE} times faster ("hour" ${HOUR_MS / 1000} s), window ${WINDOW}`,
      ...events.map((e) => `  ${e}`),
      `wall ${(wallMs / 1000).toFixed(1)} s = ${(wallMs / HOUR_MS).toFixed(2)} scaled hours; batch runs ${summary.runs}`,
      `rows ${ROWS}, output lines ${lines.length}, rows missing ${missing}, rows doubled ${doubled}`,
      `outcomes: found ${summary.found}, empty ${summary.empty}, failed ${summary.failed} ${JSON.stringify(summary.failedByCode)}`,
      `submits per row (emulator's jobs / rows) ${(stats.jobsSubmitted / ROWS).toFixed(3)} (${stats.jobsSubmitted} jobs; ${stats.duplicateSubmits} of them for a person already sent on another row of the file)`,
      `credits charged ${stats.creditsCharged} for ${foundRows} distinct rows found`,
      `rows timed out ${byCode('poll_timeout') + byCode('submit_timeout')}; submit_outcome_unknown ${byCode('submit_outcome_unknown')} (dropped connections are injected)`,
      `429s ${stats.rateLimited}; requests ${requests}; share of the allowed rate used ${((100 * boundMs) / wallMs).toFixed(1)}% (lower bound ${(boundMs / 1000).toFixed(1)} s)`,
      '',
    ].join('\n'),
  );
  if (existsSync(`${output}.kept`)) process.stdout.write('note: the output was left aside\n');
} finally {
  current.worker.shutdown();
  await current.running;
  await connection.close();
  await emulator.stop();
  await server.stop();
  rmSync(serverDir, { recursive: true, force: true });
}
