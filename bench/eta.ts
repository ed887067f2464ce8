// The progress ETA against the time a batch really took, printed (never asserted): a batch under
// the shared throttle, on the emulator with its limits on, long enough to cross several of its
// hour windows. Every duration is scaled by the same factor: the windows (emulator and
// throttle), job latency, poll interval and max wait. At 10%, 50% and 90% of the rows, the ETA's
// error against the rest of the run, beside the former rows-per-second ETA's at the same points.
// Run: npx tsx bench/eta.ts [rows] [timeScale]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { prepareBatch, queryProgress, startBatchWorkflow } from '../src/client/batch-launch.js';
import { keyWindows, planBatch } from '../src/batch/plan.js';
import { etaSeconds as rateEtaSeconds } from '../src/batch/rate.js';
import { loadConfig } from '../src/config.js';
import { benchStore } from './batch-env.js';
import { readThrottleStatus } from '../src/client/throttle-operator.js';
import { sampleRows, startEmulator } from '../src/emulator/index.js';
import { temporalClient } from '../src/temporal/data-converter.js';
import { startDevServer } from '../src/temporal/index.js';
import { createWorker } from '../src/worker.js';

const ROWS = Number(process.argv[2] ?? 350);
/** 50 times faster: a "minute" of 1.2 s and an "hour" of 72 s. */
const TIME_SCALE = Number(process.argv[3] ?? 50);
const LIMITS = { perMinute: 20, perHour: 200 };
const HOUR_MS = 3_600_000 / TIME_SCALE;
const MINUTE_MS = 60_000 / TIME_SCALE;
const POINTS = [0.1, 0.5, 0.9];

interface Sample {
  at: number;
  done: number;
  total: number;
  eta?: number;
}

/**
 * The former ETA at a sample: rows left over the rows per second of the last minute, the minute
 * scaled like every other duration (its 60 s window unscaled would span most of a scaled hour).
 */
function baselineAt(samples: Sample[], i: number): number | undefined {
  const s = samples[i];
  let j = i;
  while (j > 0 && samples[j].at > s.at - MINUTE_MS) j--;
  const from = samples[j];
  const span = Math.max(1, s.at - from.at) / 1000;
  return rateEtaSeconds(s.total - s.done, (s.done - from.done) / span);
}

Runtime.install({ logger: new DefaultLogger('ERROR') });
const server = await startDevServer({ headless: true, logLevel: 'error' });
const emulator = await startEmulator({
  port: 0,
  timeScale: TIME_SCALE,
  // The emulator shortens its default job latency (about 1.5 s) and its windows by timeScale.
  limits: { enabled: true, ...LIMITS },
  devKey: { key: 'pcds_bench_key', secret: 'pcds_bench_secret', credits: null },
});
const keyId = `eta-bench-${Date.now()}`;
const config = loadConfig({
  PCDS_BASE_URL: emulator.url,
  PCDS_API_KEYS: JSON.stringify([{ ...emulator.devKey, id: keyId }]),
  PCDS_THROTTLE: 'on',
  PCDS_THROTTLE_TIME_SCALE: String(TIME_SCALE),
  PCDS_RATE_PER_MINUTE: String(LIMITS.perMinute),
  PCDS_RATE_PER_HOUR: String(LIMITS.perHour),
  PCDS_POLL_INTERVAL_MS: String(Math.max(1, Math.round(1_000 / TIME_SCALE))),
  PCDS_MAX_WAIT_MS: String(Math.round((30 * 60_000) / TIME_SCALE)),
  PCDS_TEMPORAL_ADDRESS: server.address,
  PCDS_TASK_QUEUE: 'bench-eta',
  PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
});
const batchStore = benchStore(config);
const nativeConnection = await NativeConnection.connect({ address: server.address });
const worker = await createWorker({
  config,
  store: batchStore,
  connection: nativeConnection,
});
const running = worker.run();
const connection = await Connection.connect({ address: server.address });
const client = temporalClient(connection, config);
try {
  const emails = sampleRows({ rows: ROWS, unknownShare: 0.2 }).map((r) => r.email);
  const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-eta-'));
  const input = join(dir, 'rows.csv');
  writeFileSync(input, ['email', ...emails].join('\n') + '\n');
  const prepared = await prepareBatch({
    input,
    output: join(dir, 'out.jsonl'),
    batchId: `eta-bench-${Date.now()}`,
    pollIntervalMs: config.PCDS_POLL_INTERVAL_MS,
    maxWaitMs: config.PCDS_MAX_WAIT_MS,
    dedupe: false,
  });
  const plan = planBatch({
    rows: ROWS,
    duplicates: 0,
    invalid: 0,
    webhooks: false,
    keys: [keyWindows({ id: 'k', ...LIMITS }, TIME_SCALE)],
    creditsPerRow: 1,
    timeScale: TIME_SCALE,
  });
  process.stdout.write(
    `ETA benchmark: ${ROWS} enrichments, 1 key of ${LIMITS.perMinute}/minute and ${LIMITS.perHour}/hour, ${TIME_SCALE} times faster (hour ${HOUR_MS / 1000} s); plan: ${plan.requests} requests, ${plan.hours!.toFixed(2)} scaled hours (${(plan.durationMs! / 1000).toFixed(0)} s)\n`,
  );
  const started = Date.now();
  const handle = await startBatchWorkflow(client, worker.taskQueue, prepared, {
    store: await batchStore.get(),
  });
  let ended = false;
  const result = handle.result().finally(() => (ended = true));
  const samples: Sample[] = [];
  while (!ended) {
    try {
      const p = await queryProgress(handle);
      samples.push({
        at: Date.now(),
        done: p.done,
        total: p.total,
        ...(p.etaSeconds !== undefined ? { eta: p.etaSeconds } : {}),
      });
    } catch {
      // Between two runs of the batch: the next sample.
    }
    await sleep(100);
  }
  const summary = await result;
  const end = Date.now();
  const wall = (end - started) / 1000;
  process.stdout.write(
    `batch ${summary.state}: ${summary.done} rows (found ${summary.found}, empty ${summary.empty}, failed ${summary.failed}) in ${wall.toFixed(1)} s = ${(wall / (HOUR_MS / 1000)).toFixed(2)} scaled hours; ${summary.requestsPerRow ?? '?'} requests per found/empty row; plan error ${pct(plan.durationMs! / 1000, wall)}\n`,
  );
  const stats = emulator.stats(emulator.devKey.id);
  const [throttle] = await readThrottleStatus(client, [keyId]);
  process.stdout.write(
    `requests ${Object.values(stats.requests).reduce((a, b) => a + b, 0)}, 429s ${stats.rateLimited}; throttle limits now ${throttle.snapshot.minute.limit}/min ${throttle.snapshot.hour.limit}/h\n`,
  );
  process.stdout.write('rows done   remaining (s)   ETA (s)  error   old ETA (s)  error\n');
  for (const point of POINTS) {
    const i = samples.findIndex((x) => x.done >= point * ROWS);
    const s = samples[i];
    if (!s) {
      process.stdout.write(`${Math.round(point * 100)}%: no sample\n`);
      continue;
    }
    const actual = (end - s.at) / 1000;
    process.stdout.write(
      `${`${Math.round(point * 100)}% (${s.done})`.padEnd(12)}${actual.toFixed(1).padStart(13)}   ${fmt(s.eta).padStart(7)}  ${pct(s.eta, actual).padStart(5)}   ${fmt(baselineAt(samples, i)).padStart(11)}  ${pct(baselineAt(samples, i), actual).padStart(5)}\n`,
    );
  }
} finally {
  worker.shutdown();
  await running;
  await connection.close();
  await nativeConnection.close();
  await emulator.stop();
  await server.stop();
}

function fmt(v: number | undefined): string {
  return v === undefined ? '--' : v.toFixed(0);
}

function pct(estimate: number | undefined, actual: number): string {
  return estimate === undefined
    ? '--'
    : `${Math.round((100 * Math.abs(estimate - actual)) / actual)}%`;
}
