// The shared throttle under a batch, beside a straightforward baseline, against the emulator with
// time-scaled limits and realistic job latency. Prints (does not assert): wall time beside the
// lower bound the two windows allow for the requests made, the share of the allowed rate used,
// 429s, requests per completed row, and credits charged against distinct rows found.
// Run: npx tsx bench/throttle.ts [rows] [timeScale]
import { createReadStream, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { randomBytes } from 'node:crypto';
import { temporalClient } from '../src/temporal/data-converter.js';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { request } from 'undici';
import { prepareBatch, startBatchWorkflow } from '../src/client/batch-launch.js';
import { loadConfig } from '../src/config.js';
import { benchStore } from './batch-env.js';
import { sampleRows, startEmulator, type RunningEmulator } from '../src/emulator/index.js';
import { startDevServer } from '../src/temporal/index.js';
import { createWorker } from '../src/worker.js';

const ROWS = Number(process.argv[2] ?? 80);
/** 20 times faster: a "minute" of 3 s and an "hour" of 180 s. */
const TIME_SCALE = Number(process.argv[3] ?? 20);
const LIMITS = { perMinute: 20, perHour: 200 };
const MINUTE_MS = 60_000 / TIME_SCALE;
const HOUR_MS = 3_600_000 / TIME_SCALE;
/** "About once per second", in scaled time. */
const POLL_MS = Math.round(1_000 / TIME_SCALE);
const WINDOW = 20;

interface RunFigures {
  label: string;
  wallMs: number;
  requests: number;
  rateLimited: number;
  found: number;
  completed: number;
  credits: number;
}

/** Earliest time the last of `n` requests can go when bursting to both limits from t = 0. */
function lowerBoundMs(n: number): number {
  const last = n - 1;
  return Math.max(
    Math.floor(last / LIMITS.perMinute) * MINUTE_MS,
    Math.floor(last / LIMITS.perHour) * HOUR_MS,
  );
}

function totals(emulator: RunningEmulator): {
  requests: number;
  rateLimited: number;
  credits: number;
} {
  const s = emulator.stats(emulator.devKey.id);
  return {
    requests: Object.values(s.requests).reduce((a, b) => a + b, 0),
    rateLimited: s.rateLimited,
    credits: s.creditsCharged,
  };
}

async function throttledBatch(
  emulator: RunningEmulator,
  temporalAddress: string,
  emails: string[],
): Promise<RunFigures> {
  const config = loadConfig({
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEYS: JSON.stringify([{ ...emulator.devKey, id: `bench-${Date.now()}` }]),
    PCDS_THROTTLE: 'on',
    PCDS_THROTTLE_TIME_SCALE: String(TIME_SCALE),
    PCDS_RATE_PER_MINUTE: String(LIMITS.perMinute),
    PCDS_RATE_PER_HOUR: String(LIMITS.perHour),
    PCDS_TEMPORAL_ADDRESS: temporalAddress,
    PCDS_TASK_QUEUE: 'bench-throttle',
    PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  });
  const batchStore = benchStore(config);
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  const worker = await createWorker({
    config,
    store: batchStore,
    connection: nativeConnection,
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: temporalAddress });
  const client = temporalClient(connection, config);
  try {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-throttle-'));
    const input = join(dir, 'rows.csv');
    writeFileSync(input, ['email', ...emails].join('\n') + '\n');
    const output = join(dir, 'out.jsonl');
    const prepared = await prepareBatch({
      input,
      output,
      window: WINDOW,
      batchId: `throttle-bench-${Date.now()}`,
      pollIntervalMs: POLL_MS,
    });
    const started = Date.now();
    const handle = await startBatchWorkflow(client, worker.taskQueue, prepared, {
      store: await batchStore.get(),
    });
    await handle.result();
    const wallMs = Date.now() - started;
    let found = 0;
    let completed = 0;
    for await (const line of createInterface({ input: createReadStream(output) })) {
      if (!line) continue;
      completed += 1;
      if (/"outcome":"found"/.test(line)) found += 1;
    }
    return {
      label: 'shared throttle, batch workflow',
      wallMs,
      found,
      completed,
      ...totals(emulator),
    };
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
    await nativeConnection.close();
  }
}

/** A concurrent loop: submit, poll once a "second", retry a 429 after its Retry-After. */
async function baseline(emulator: RunningEmulator, emails: string[]): Promise<RunFigures> {
  const headers = {
    'content-type': 'application/json',
    'x-api-key': emulator.devKey.key,
    'x-api-secret': emulator.devKey.secret,
  };
  const send = async (
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: any }> => {
    for (;;) {
      const res = await request(emulator.url + path, {
        method,
        headers,
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const json: any = await res.body.json().catch(() => undefined);
      if (res.statusCode !== 429) return { status: res.statusCode, json };
      const ra = Number(res.headers['retry-after'] ?? 1);
      await sleep(ra * 1000);
    }
  };
  let found = 0;
  let completed = 0;
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: WINDOW }, async () => {
      while (next < emails.length) {
        const email = emails[next++];
        const submitted = await send('POST', '/person/enrichment', { email });
        const requestId = submitted.json?.data?.request_id as string | undefined;
        let outcome = submitted.status < 300 && requestId ? 'running' : 'failed';
        while (outcome === 'running') {
          await sleep(POLL_MS);
          const polled = await send(
            'GET',
            `/person/enrichment?request_id=${encodeURIComponent(requestId!)}`,
          );
          const data = polled.json?.data;
          if (polled.status >= 400) outcome = 'failed';
          else if (
            data?.completed === true ||
            ['completed', 'failed', 'not_found'].includes(data?.status)
          ) {
            outcome =
              data?.status === 'completed' && data?.result && Object.keys(data.result).length > 0
                ? 'found'
                : 'empty';
          }
        }
        completed += 1;
        if (outcome === 'found') found += 1;
      }
    }),
  );
  return {
    label: 'baseline: concurrent loop, poll 1/s, 429 -> Retry-After',
    wallMs: Date.now() - started,
    found,
    completed,
    ...totals(emulator),
  };
}

function print(r: RunFigures): void {
  // 429s are not admitted by the windows: the bound counts the requests the service accepted.
  const accepted = r.requests - r.rateLimited;
  const bound = lowerBoundMs(accepted);
  process.stdout.write(
    [
      `${r.label}`,
      `  rows completed ${r.completed}/${ROWS}, found ${r.found}`,
      `  wall ${(r.wallMs / 1000).toFixed(1)} s; lower bound for ${accepted} accepted requests (${r.requests} sent) under ${LIMITS.perMinute}/${(MINUTE_MS / 1000).toFixed(1)} s and ${LIMITS.perHour}/${(HOUR_MS / 1000).toFixed(0)} s: ${(bound / 1000).toFixed(1)} s`,
      `  share of the allowed rate used ${((100 * bound) / r.wallMs).toFixed(1)}%`,
      `  429s received ${r.rateLimited}`,
      `  requests per completed row ${(r.requests / Math.max(1, r.completed)).toFixed(2)}`,
      `  completed rows per second ${(r.completed / (r.wallMs / 1000)).toFixed(2)}`,
      `  credits charged ${r.credits} for ${r.found} distinct rows found${r.credits === r.found ? ' (none twice)' : ' (MISMATCH)'}`,
      '',
    ].join('\n'),
  );
}

Runtime.install({ logger: new DefaultLogger('ERROR') });
const server = await startDevServer({ headless: true, logLevel: 'error' });
const emulator = await startEmulator({
  port: 0,
  timeScale: TIME_SCALE,
  // About 10 s per job (0.5 s at the default scale), as deep enrichments take.
  latency: { queuedMs: 2_000, processingMs: 8_000 },
  limits: { enabled: true, ...LIMITS },
  devKey: { key: 'pcds_bench_key', secret: 'pcds_bench_secret', credits: null },
});
try {
  const emails = sampleRows({ rows: ROWS, unknownShare: 0.2 }).map((r) => r.email);
  process.stdout.write(
    `throttle benchmark: ${ROWS} enrichments, window ${WINDOW}, limits ${LIMITS.perMinute}/minute ${LIMITS.perHour}/hour, ${TIME_SCALE} times faster (minute ${MINUTE_MS} ms), poll every ${POLL_MS} ms; driver: batch workflow\n\n`,
  );
  print(await throttledBatch(emulator, server.address, emails));
  emulator.reset();
  await sleep(MINUTE_MS);
  print(await baseline(emulator, emails));
} finally {
  await emulator.stop();
  await server.stop();
}
