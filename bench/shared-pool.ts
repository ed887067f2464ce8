// One pool of keys shared by many, under the first-come throttle (the baseline) and the fair
// scheduler in the same run, as a team uses it: 4 keys at the real 1:10 minute/hour ratio (100 a
// minute, 1,000 an hour each), three compact batches of 500, 400 and 300 rows with different
// windows (10, 50 and 200 rows in flight) started 30 s apart, a person's single person_enrichment
// call every 15 s, and a tenant over its budget (60 requests an hour across the pool) calling
// every 30 s; each run lasts until the batches are done and more than an hour window has passed.
// Every duration is scaled alike (default 10 times faster): the emulator's windows and job
// latency, the throttle's windows, the poll intervals, the maximum waits and the bench's own
// spacing. Prints (does not assert) each batch's share of the batch requests while all three run
// against its fair share, the pool's use against what its windows allowed while batches ran,
// 429s, the person's calls' time (p50, p95, max, scaled and at the real pace) against the same
// call on the idle pool, and what the tenant over budget got.
// Run: npx tsx bench/shared-pool.ts [timeScale=10] [maxHours=3] [weights=1,1,1]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { prepareBatch, startBatchWorkflow } from '../src/client/batch-launch.js';
import { createPcdsClient } from '../src/client.js';
import { loadConfig } from '../src/config.js';
import { requesterId, type Requester } from '../src/contract/index.js';
import { sampleRows, startEmulator, type RunningEmulator } from '../src/emulator/index.js';
import { startDevServer } from '../src/temporal/index.js';
import { dataConverterFromSettings, temporalClient } from '../src/temporal/data-converter.js';
import type { PermitGate } from '../src/throttle/permits.js';
import type { SchedulerMode } from '../src/throttle/scheduler.js';
import { permitGateFromConfig } from '../src/worker/permit-gate.js';
import { createWorker } from '../src/worker.js';
import { benchStore } from './batch-env.js';

/** How many times faster than the service every duration runs. */
const TIME_SCALE = Number(process.argv[2] ?? 10);
const MAX_HOURS = Number(process.argv[3] ?? 3);
/** The batches' weights (the fair scheduler's; first-come ignores them). */
const WEIGHTS = (process.argv[4] ?? '1,1,1').split(',').map(Number);
const LIMITS = { perMinute: 100, perHour: 1_000 };
const KEYS = 4;
const MINUTE_MS = 60_000 / TIME_SCALE;
const HOUR_MS = 3_600_000 / TIME_SCALE;
/** One slot of the minute window: the spacing of 100 requests a minute. */
const SLOT_MS = MINUTE_MS / LIMITS.perMinute;
const BATCHES = [
  { rows: 500, window: 10 },
  { rows: 400, window: 50 },
  { rows: 300, window: 200 },
];
const BATCH_EVERY_MS = 30_000 / TIME_SCALE;
const CALL_EVERY_MS = 15_000 / TIME_SCALE;
/** A run lasts at least this long: past the first hour window, so the batches cross it. */
const MIN_RUN_MS = 1.25 * HOUR_MS;
const IDLE_CALLS = 6;
/** The tenant over budget: its budget across the pool, and how often it calls. */
const HEAVY_TENANT = 'heavy';
const HEAVY_BUDGET = 60;
const HEAVY_EVERY_MS = 30_000 / TIME_SCALE;
const PEOPLE = 20_000;
const WAITS = {
  pollIntervalMs: Math.max(1, Math.round(1_000 / TIME_SCALE)),
  maxWaitMs: Math.round((4 * 3_600_000) / TIME_SCALE),
};

const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const ID_SECRET = randomBytes(32).toString('base64');

interface Permit {
  at: number;
  keyId: string;
  requester: string;
  class: Requester['class'];
}

interface RunResult {
  mode: SchedulerMode;
  batchIds: string[];
  batchStarts: number[];
  batchEnds: number[];
  permits: Permit[];
  idleMs: number[];
  callMs: number[];
  callsUnfinished: number;
  heavy: { done: number; refused: number; other: number };
  rateLimited: number;
}

/** The gate of a worker, with every permit it grants written down (when, which key, who). */
function countingGate(gate: PermitGate, permits: Permit[]): PermitGate {
  return {
    ...gate,
    async acquire(keyId, kind, options) {
      await gate.acquire(keyId, kind, options);
      permits.push({
        at: Date.now(),
        keyId,
        requester: requesterId(options.requester),
        class: options.requester.class,
      });
    },
  };
}

/** Progress on stderr: a run takes hours of the scaled clock. */
const log = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);

const percentile = (values: number[], p: number): number => {
  const v = [...values].sort((a, b) => a - b);
  return v.length === 0 ? NaN : v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)];
};

function writeInput(dir: string, name: string, rows: number, seed: number): string {
  const sample = sampleRows({
    rows,
    seed,
    unknownShare: 0.2,
    dataset: { people: PEOPLE, companies: 600 },
  });
  const path = join(dir, `${name}.csv`);
  writeFileSync(path, ['email', ...sample.map((r) => r.email)].join('\n') + '\n');
  return path;
}

async function run(
  index: number,
  mode: SchedulerMode,
  emulator: RunningEmulator,
  temporalAddress: string,
): Promise<RunResult> {
  const keys = Array.from({ length: KEYS }, (_, k) => ({
    id: `run${index}-k${k + 1}`,
    key: `pcds_bench_run${index}_k${k + 1}`,
    secret: `pcds_bench_secret_run${index}_k${k + 1}`,
  }));
  const taskQueue = `bench-shared-pool-${index}-${Date.now()}`;
  const config = loadConfig({
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEYS: JSON.stringify(keys.map((k) => ({ ...k, ...LIMITS }))),
    PCDS_THROTTLE: 'on',
    PCDS_THROTTLE_TIME_SCALE: String(TIME_SCALE),
    PCDS_THROTTLE_SCHEDULER: mode,
    PCDS_TENANTS: JSON.stringify({ [HEAVY_TENANT]: { requestsPerHour: HEAVY_BUDGET } }),
    PCDS_POLL_INTERVAL_MS: String(WAITS.pollIntervalMs),
    PCDS_MAX_WAIT_MS: String(WAITS.maxWaitMs),
    PCDS_CACHE: 'off',
    PCDS_TEMPORAL_ADDRESS: temporalAddress,
    PCDS_TASK_QUEUE: taskQueue,
    PCDS_HTTP_CONNECTIONS: '64',
    PCDS_ENCRYPTION_KEY: ENCRYPTION_KEY,
    PCDS_ID_SECRET: ID_SECRET,
  });
  const permits: Permit[] = [];
  const store = benchStore(config);
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  const worker = await createWorker({
    config,
    store,
    connection: nativeConnection,
    permits: countingGate(permitGateFromConfig(config, nativeConnection, taskQueue), permits),
    workerOptions: {
      maxConcurrentWorkflowTaskExecutions: 100,
      maxConcurrentActivityTaskExecutions: 1_000,
    },
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: temporalAddress });
  const client = temporalClient(connection, config);
  const pcds = await createPcdsClient({
    connection,
    taskQueue,
    namespace: config.PCDS_TEMPORAL_NAMESPACE,
    dataConverter: dataConverterFromSettings(config),
    idSecret: ID_SECRET,
    defaults: { cache: false, ...WAITS },
  });
  const people = sampleRows({
    rows: 2_000,
    seed: 1_000 + index,
    dataset: { people: PEOPLE, companies: 600 },
  });
  let person = 0;
  const nextEmail = () => people[person++ % people.length].email;
  /** The person's call (the operator's tenant): its time, or undefined when it did not succeed. */
  const call = async (): Promise<number | undefined> => {
    const started = Date.now();
    const handle = await pcds.startCall('person_enrichment', { email: nextEmail() });
    const outcome = await handle.result().catch(() => undefined);
    return outcome ? Date.now() - started : undefined;
  };
  /** The tenant over budget's call, through a client of that tenant. */
  const heavy = { done: 0, refused: 0, other: 0 };
  const heavyClient = pcds.withTenant(HEAVY_TENANT);
  const heavyCall = async (): Promise<void> => {
    const handle = await heavyClient.startCall('person_enrichment', { email: nextEmail() });
    const answer: unknown = await handle.result().catch((err: unknown) => err);
    const code = (answer as { code?: unknown } | undefined)?.code;
    if (!(answer instanceof Error)) heavy.done += 1;
    else if (code === 'tenant_budget' || answer.message.includes('tenant_budget'))
      heavy.refused += 1;
    else heavy.other += 1;
  };
  try {
    // The call alone, on the idle pool: its latency is the reference.
    const idleMs: number[] = [];
    for (let i = 0; i < IDLE_CALLS; i++) {
      const ms = await call();
      if (ms !== undefined) idleMs.push(ms);
    }
    log(`run ${index} (${mode}): idle call p50 ${percentile(idleMs, 50)} ms`);
    const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-shared-pool-'));
    const startedAt = Date.now();
    const callMs: number[] = [];
    let unfinished = 0;
    const calls: Promise<void>[] = [];
    let stop = false;
    const personLoop = (async () => {
      while (!stop) {
        calls.push(
          call().then((ms) => {
            if (ms === undefined) unfinished += 1;
            else callMs.push(ms);
          }),
        );
        await sleep(CALL_EVERY_MS);
      }
    })();
    const heavyLoop = (async () => {
      while (!stop) {
        calls.push(heavyCall().catch(() => void (heavy.other += 1)));
        await sleep(HEAVY_EVERY_MS);
      }
    })();
    const batchStarts: number[] = [];
    const batchEnds: number[] = [];
    const batchIds: string[] = [];
    const finished: Promise<void>[] = [];
    for (const [b, { rows, window }] of BATCHES.entries()) {
      if (b > 0) await sleep(startedAt + b * BATCH_EVERY_MS - Date.now());
      const prepared = await prepareBatch({
        input: writeInput(dir, `w${window}`, rows, 100 * index + b),
        output: join(dir, `w${window}.jsonl`),
        window,
        compact: true,
        keyIds: keys.map((k) => k.id),
        batchId: `shared-pool-${index}-w${window}-${Date.now()}`,
        weight: WEIGHTS[b],
        ...WAITS,
      });
      const handle = await startBatchWorkflow(client, taskQueue, prepared, {
        store: await store.get(),
      });
      batchStarts[b] = Date.now();
      batchIds[b] = handle.workflowId.replace(/^batch-/, '');
      log(`run ${index}: batch ${b + 1} (${rows} rows, window ${window}) started`);
      finished.push(
        handle.result().then(
          () => {
            batchEnds[b] = Date.now();
            log(`run ${index}: batch ${b + 1} done after ${sec(batchEnds[b] - batchStarts[b])}`);
          },
          (err: unknown) => {
            log(`run ${index}: batch ${b + 1} failed: ${String(err)}`);
          },
        ),
      );
    }
    // Unreferenced: a bound that was not reached keeps the process from ending for nothing.
    const deadline = sleep(startedAt + MAX_HOURS * HOUR_MS - Date.now(), undefined, { ref: false });
    await Promise.race([Promise.all(finished), deadline]);
    await sleep(Math.max(0, startedAt + MIN_RUN_MS - Date.now()));
    stop = true;
    await Promise.all([personLoop, heavyLoop]);
    await Promise.race([Promise.all(calls), sleep(HOUR_MS, undefined, { ref: false })]);
    log(`run ${index}: ${callMs.length} calls done; ${permits.length} permits`);
    let rateLimited = 0;
    for (const k of keys) rateLimited += emulator.stats(k.id).rateLimited;
    return {
      mode,
      batchIds,
      batchStarts,
      batchEnds,
      permits: permits.filter((p) => p.at >= startedAt),
      idleMs,
      callMs,
      callsUnfinished: unfinished,
      heavy,
      rateLimited,
    };
  } finally {
    await pcds.close();
    worker.shutdown();
    await running;
    await store.close();
    await connection.close();
    await nativeConnection.close();
  }
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const real = (ms: number) => `${((ms * TIME_SCALE) / 60_000).toFixed(1)} min`;

/** Requests a key's windows allow over `ms`: the tighter of its minute and hour windows. */
const allowed = (ms: number) =>
  KEYS *
  Math.min(LIMITS.perMinute * Math.ceil(ms / MINUTE_MS), LIMITS.perHour * Math.ceil(ms / HOUR_MS));

function report(r: RunResult): string[] {
  const lines = [r.mode === 'first-come' ? 'first-come (baseline)' : 'fair scheduler'];
  // Shares while all three batches run: from the last start to the first end.
  const allFrom = Math.max(...r.batchStarts);
  const ends = r.batchEnds.filter((e) => e !== undefined);
  const allUntil = Math.min(...(ends.length === BATCHES.length ? ends : [Date.now()]));
  const inAll = r.permits.filter((p) => p.class === 'batch' && p.at >= allFrom && p.at < allUntil);
  const total = WEIGHTS.reduce((x, y) => x + y, 0);
  const fair = WEIGHTS.map((w) => w / total);
  for (const [b, id] of r.batchIds.entries()) {
    const share = inAll.filter((p) => p.requester === `batch:${id}`).length / inAll.length;
    const { rows, window } = BATCHES[b];
    const took = r.batchEnds[b] ? sec(r.batchEnds[b] - r.batchStarts[b]) : 'not done';
    lines.push(
      `  batch ${b + 1} (${rows} rows, window ${window}, weight ${WEIGHTS[b]}): share ${pct(share)} while all ran (fair ${pct(fair[b])}); took ${took}`,
    );
  }
  const allUsed = r.permits.filter((p) => p.at >= allFrom && p.at < allUntil).length;
  lines.push(
    `  all three ran for ${sec(allUntil - allFrom)}: ${inAll.length} batch requests, ${allUsed} in all of ${allowed(allUntil - allFrom)} the windows allowed (${pct(allUsed / allowed(allUntil - allFrom))})`,
  );
  // The pool's use while batches ran: from the first start to the last batch request.
  const batchPermits = r.permits.filter((p) => p.class === 'batch');
  const from = Math.min(...r.batchStarts);
  const until = Math.max(...batchPermits.map((p) => p.at)) + 1;
  const used = r.permits.filter((p) => p.at >= from && p.at < until).length;
  lines.push(
    `  pool use while batches ran (${sec(until - from)}): ${used} requests of ${allowed(until - from)} the windows allowed (${pct(used / allowed(until - from))}); 429s ${r.rateLimited}`,
  );
  const idle = percentile(r.idleMs, 50);
  const goal = idle + SLOT_MS;
  const [p50, p95, max] = [
    percentile(r.callMs, 50),
    percentile(r.callMs, 95),
    Math.max(...r.callMs),
  ];
  lines.push(
    `  person's calls: ${r.callMs.length} done${r.callsUnfinished ? `, ${r.callsUnfinished} not` : ''}; p50 ${sec(p50)}, p95 ${sec(p95)}, max ${sec(max)} (real pace: ${real(p50)}, ${real(p95)}, ${real(max)}); idle p50 ${sec(idle)}; goal p90 <= ${sec(goal)}, max <= ${sec(3 * goal)}`,
  );
  lines.push(
    `  tenant ${HEAVY_TENANT} (budget ${HEAVY_BUDGET} requests an hour): ${r.heavy.done} calls done, ${r.heavy.refused} refused with tenant_budget, ${r.heavy.other} failed otherwise; its requests ${r.permits.filter((p) => p.requester === `interactive:${HEAVY_TENANT}`).length}`,
  );
  return lines;
}

Runtime.install({ logger: new DefaultLogger('ERROR') });
const server = await startDevServer({ headless: true, logLevel: 'error' });
const emulator = await startEmulator({
  port: 0,
  timeScale: TIME_SCALE,
  limits: { enabled: true, ...LIMITS },
  dataset: { people: PEOPLE, companies: 600 },
  keys: [0, 1].flatMap((index) =>
    Array.from({ length: KEYS }, (_, k) => ({
      id: `run${index}-k${k + 1}`,
      key: `pcds_bench_run${index}_k${k + 1}`,
      secret: `pcds_bench_secret_run${index}_k${k + 1}`,
      credits: null,
      perMinute: LIMITS.perMinute,
      perHour: LIMITS.perHour,
    })),
  ),
});
try {
  process.stdout.write(
    `shared pool: ${KEYS} keys of ${LIMITS.perMinute}/minute and ${LIMITS.perHour}/hour; batches of ${BATCHES.map((b) => `${b.rows} rows (window ${b.window})`).join(', ')} started ${sec(BATCH_EVERY_MS)} apart; a person's call every ${sec(CALL_EVERY_MS)}; tenant ${HEAVY_TENANT} calls every ${sec(HEAVY_EVERY_MS)}; time scale ${TIME_SCALE} (minute ${sec(MINUTE_MS)}, hour ${sec(HOUR_MS)}, slot ${sec(SLOT_MS)})\n\n`,
  );
  const firstCome = await run(0, 'first-come', emulator, server.address);
  process.stdout.write(report(firstCome).join('\n') + '\n');
  const fair = await run(1, 'fair', emulator, server.address);
  process.stdout.write(report(fair).join('\n') + '\n');
} finally {
  await emulator.stop();
  await server.stop();
}
