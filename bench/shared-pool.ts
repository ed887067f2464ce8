// One pool of keys shared by many, under the first-come throttle (the baseline) and the fair
// scheduler in the same run, as a team uses it: 4 keys at the real 1:10 minute/hour ratio (100 a
// minute, 1,000 an hour each), three compact batches with different windows (10, 50 and 200 rows
// in flight) started 30 s apart and big enough to spend the pool's hour several times over, a
// person's single person_enrichment call every 15 s, and a tenant over its budget (60 requests an
// hour across the pool) calling every 30 s. Three runs: first-come, fair with equal weights, and
// fair with the weights given (default 1,1,2; the same rows in all, split by weight, so all three
// run together to the end); each lasts until its batches are done (or the bound of hours) and at
// least two hour windows have passed.
// Every duration is scaled alike (default 10 times faster): the emulator's windows and job
// latency, the throttle's windows, the poll intervals, the maximum waits and the bench's own
// spacing. Prints (does not assert), for each run: each batch's share of the permits granted while
// all three ran (each had rows enough to want more than the pool gave) against its weighted fair
// share, beside its share at the moments all three had requests waiting and over the whole run; the pool's use against what its windows
// allowed while the batches ran; 429s; the person's calls' time (p50, p90, max) and the wait of
// their permits against the same on the idle pool plus one slot of the minute window; and what the
// tenant over budget got.
// Run: npx tsx bench/shared-pool.ts [timeScale=10] [maxHours=2.5] [weights=1,1,2] [rows=1300,1300,1300]
//        [runs=first-come,fair,weighted] (a subset, to try a change quickly; the figures of record
//        print every run, the baseline beside)
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
const MAX_HOURS = Number(process.argv[3] ?? 2.5);
/** The weights of the last run's batches (the fair scheduler's; first-come ignores them). */
const WEIGHTS = (process.argv[4] ?? '1,1,2').split(',').map(Number);
const ROWS = (process.argv[5] ?? '1300,1300,1300').split(',').map(Number);
const RUNS = new Set((process.argv[6] ?? 'first-come,fair,weighted').split(','));
const LIMITS = { perMinute: 100, perHour: 1_000 };
const KEYS = 4;
const MINUTE_MS = 60_000 / TIME_SCALE;
const HOUR_MS = 3_600_000 / TIME_SCALE;
/** One slot of the minute window: the spacing of 100 requests a minute. */
const SLOT_MS = MINUTE_MS / LIMITS.perMinute;
const BATCHES = [10, 50, 200].map((window, b) => ({ rows: ROWS[b], window }));
/**
 * The rows of each batch in a run with these weights: as given when the weights are equal, else
 * the same rows in all split by weight, so all three run until about the same end and their
 * shares and the pool's use are measured over the same hours as with equal weights (with equal
 * rows the heaviest finished first, and little more than the first hour was measured).
 */
function rowsFor(weights: number[]): number[] {
  if (weights.every((w) => w === weights[0])) return BATCHES.map((b) => b.rows);
  const all = ROWS.reduce((a, b) => a + b, 0);
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => Math.round((all * w) / total));
}
const BATCH_EVERY_MS = 30_000 / TIME_SCALE;
const CALL_EVERY_MS = 15_000 / TIME_SCALE;
/** A run lasts at least this long: past two hour windows, so the batches cross them. */
const MIN_RUN_MS = 2.1 * HOUR_MS;
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
  /** How long the caller waited for it. */
  waitedMs: number;
  /** The batch requesters that had a request waiting when it was granted (itself included). */
  waiting: string[];
  /** Those of them that had a request waiting on this permit's key. */
  waitingOnKey: string[];
}

interface RunResult {
  mode: SchedulerMode;
  weights: number[];
  rows: number[];
  batchIds: string[];
  batchStarts: number[];
  batchEnds: number[];
  permits: Permit[];
  idleMs: number[];
  /** The permit waits of the idle calls. */
  idleWaits: number[];
  callMs: number[];
  callsUnfinished: number;
  heavy: { done: number; refused: number; other: number };
  rateLimited: number;
}

/**
 * The gate of a worker, with every permit it grants written down: when, which key, who, how long
 * its caller waited, and which batches had requests waiting at that moment.
 */
function countingGate(gate: PermitGate, permits: Permit[]): PermitGate {
  const waiting = new Map<string, number>();
  const onKey = new Map<string, Map<string, number>>();
  const batchesWaiting = (counts: Map<string, number> | undefined) =>
    [...(counts ?? [])].filter(([r, n]) => n > 0 && r.startsWith('batch:')).map(([r]) => r);
  return {
    ...gate,
    async acquire(keyId, kind, options) {
      const requester = requesterId(options.requester);
      const asked = Date.now();
      const keyCounts = onKey.get(keyId) ?? onKey.set(keyId, new Map()).get(keyId)!;
      waiting.set(requester, (waiting.get(requester) ?? 0) + 1);
      keyCounts.set(requester, (keyCounts.get(requester) ?? 0) + 1);
      try {
        await gate.acquire(keyId, kind, options);
        const at = Date.now();
        permits.push({
          at,
          keyId,
          requester,
          class: options.requester.class,
          waitedMs: at - asked,
          waiting: batchesWaiting(waiting),
          waitingOnKey: batchesWaiting(keyCounts),
        });
      } finally {
        waiting.set(requester, (waiting.get(requester) ?? 1) - 1);
        keyCounts.set(requester, (keyCounts.get(requester) ?? 1) - 1);
      }
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
  weights: number[],
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
    const idleWaits = permits.map((p) => p.waitedMs);
    log(`run ${index} (${mode} ${weights.join(':')}): idle call p50 ${percentile(idleMs, 50)} ms`);
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
    const handles: { cancel(): Promise<unknown> }[] = [];
    const rowsOf = rowsFor(weights);
    for (const [b, { window }] of BATCHES.entries()) {
      const rows = rowsOf[b];
      if (b > 0) await sleep(startedAt + b * BATCH_EVERY_MS - Date.now());
      const prepared = await prepareBatch({
        input: writeInput(dir, `w${window}`, rows, 100 * index + b),
        output: join(dir, `w${window}.jsonl`),
        window,
        compact: true,
        keyIds: keys.map((k) => k.id),
        batchId: `shared-pool-${index}-w${window}-${Date.now()}`,
        weight: weights[b],
        ...WAITS,
      });
      const handle = await startBatchWorkflow(client, taskQueue, prepared, {
        store: await store.get(),
      });
      batchStarts[b] = Date.now();
      handles[b] = handle;
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
    // A batch the bound of hours cut short is cancelled, so the worker can stop.
    for (const [b, handle] of handles.entries())
      if (batchEnds[b] === undefined) await handle.cancel().catch(() => undefined);
    stop = true;
    await Promise.all([personLoop, heavyLoop]);
    await Promise.race([Promise.all(calls), sleep(HOUR_MS, undefined, { ref: false })]);
    log(`run ${index}: ${callMs.length} calls done; ${permits.length} permits`);
    let rateLimited = 0;
    for (const k of keys) rateLimited += emulator.stats(k.id).rateLimited;
    return {
      mode,
      weights,
      rows: rowsOf,
      batchIds,
      batchStarts,
      batchEnds,
      permits: permits.filter((p) => p.at >= startedAt),
      idleMs,
      idleWaits,
      callMs,
      callsUnfinished: unfinished,
      heavy,
      rateLimited,
    };
  } finally {
    await pcds.close();
    worker.shutdown();
    await Promise.race([running, sleep(HOUR_MS, undefined, { ref: false })]);
    await store.close();
    await connection.close();
    await nativeConnection.close();
  }
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const real = (ms: number) => `${((ms * TIME_SCALE) / 60_000).toFixed(1)} min`;

/**
 * Requests the pool's windows allow over `ms`: hour by hour, the tighter of the hour window and
 * the minute window over that hour's length (a sliding window allows no more in any span).
 */
function allowed(ms: number): number {
  let perKey = 0;
  for (let left = ms; left > 0; left -= HOUR_MS)
    perKey += Math.min(
      LIMITS.perHour,
      LIMITS.perMinute * Math.ceil(Math.min(left, HOUR_MS) / MINUTE_MS),
    );
  return KEYS * perKey;
}

const label = (r: RunResult) =>
  r.mode === 'first-come'
    ? 'first-come (baseline)'
    : `fair scheduler, weights ${r.weights.join(':')}`;

function report(r: RunResult, goals: boolean): string[] {
  const lines = [label(r)];
  const total = r.weights.reduce((x, y) => x + y, 0);
  const fair = r.weights.map((w) => w / total);
  const ids = r.batchIds.map((id) => `batch:${id}`);
  const batchPermits = r.permits.filter((p) => p.class === 'batch');
  const hours = (ms: number) => `${(ms / HOUR_MS).toFixed(2)} h`;
  // The share of record: every batch permit while all three ran (each had rows enough to want more
  // of the pool than it got). Beside it, permits counted only at moments every batch had a request
  // waiting on the permit's key, or on any key: these lean towards a batch with few rows in
  // flight on a key (a narrow window),
  // whose waits are short and end in its own permit (the others' permits count only while it
  // waits), so they read above its share even when it got no more than its share of the whole.
  const onKey = batchPermits.filter((p) => ids.every((id) => p.waitingOnKey.includes(id)));
  const anyKey = batchPermits.filter((p) => ids.every((id) => p.waiting.includes(id)));
  const allFrom = Math.max(...r.batchStarts);
  const ends = r.batchEnds.filter((t) => t !== undefined);
  const allUntil =
    ends.length > 0 ? Math.min(...ends) : Math.max(...batchPermits.map((p) => p.at)) + 1;
  const allRan = batchPermits.filter((p) => p.at >= allFrom && p.at < allUntil);
  const shareIn = (set: Permit[], id: string) =>
    set.filter((p) => p.requester === id).length / set.length;
  let worst = 0;
  for (const [b, id] of ids.entries()) {
    const share = shareIn(allRan, id);
    const overall = shareIn(batchPermits, id);
    worst = Math.max(worst, Math.abs(share - fair[b]) / fair[b]);
    const { window } = BATCHES[b];
    const rows = r.rows[b];
    const took = r.batchEnds[b] ? hours(r.batchEnds[b] - r.batchStarts[b]) : 'not done';
    lines.push(
      `  batch ${b + 1} (${rows} rows, window ${window}, weight ${r.weights[b]}): share ${pct(share)} while all three ran (fair ${pct(fair[b])}); ${pct(shareIn(onKey, id))} while all three waited on the key, ${pct(shareIn(anyKey, id))} on any key, ${pct(overall)} of the whole run; took ${took}`,
    );
  }
  lines.push(
    `    ${allRan.length} of ${batchPermits.length} batch permits were granted while all three ran (${onKey.length} while all three waited on the key, ${anyKey.length} on any key); worst share off its fair share by ${pct(worst)}${goals ? ' (goal <= 10%)' : ''}`,
  );
  // The pool's use over whole hours while all three batches ran (they all wanted more than the
  // pool gave): no key may send more than its hour's limit in any hour, so an hour's permits
  // against the pool's hourly limits is the use. Every hour-long span inside, a minute apart.
  const perHour = KEYS * LIMITS.perHour;
  const hourUse: number[] = [];
  for (let t = allFrom; t + HOUR_MS <= allUntil; t += MINUTE_MS)
    hourUse.push(r.permits.filter((p) => p.at >= t && p.at < t + HOUR_MS).length / perHour);
  lines.push(
    hourUse.length === 0
      ? `  pool use over whole hours while all three ran: none (all three ran ${hours(allUntil - allFrom)})`
      : `  pool use over whole hours while all three ran (${hours(allUntil - allFrom)}, ${hourUse.length} hour spans a minute apart): mean ${pct(hourUse.reduce((a, b) => a + b, 0) / hourUse.length)}, lowest ${pct(Math.min(...hourUse))} of ${perHour} an hour${goals ? ' (goal >= 97%)' : ''}`,
  );
  // For comparison: the whole time batches ran, against the most the windows allowed hour by hour
  // (a burst of each key's hour at the start of every hour, the last partial hour included).
  const from = Math.min(...r.batchStarts);
  const until = Math.max(...batchPermits.map((p) => p.at)) + 1;
  const used = r.permits.filter((p) => p.at >= from && p.at < until).length;
  lines.push(
    `    from the first start to the last batch permit (${hours(until - from)}): ${used} requests of ${allowed(until - from)} the windows allowed at most (${pct(used / allowed(until - from))}); 429s ${r.rateLimited}`,
  );
  const idle = percentile(r.idleMs, 50);
  const goal = idle + SLOT_MS;
  const interactive = r.permits.filter((p) => p.class === 'interactive');
  const waits = interactive.filter((p) => p.requester !== `interactive:${HEAVY_TENANT}`);
  const w = (p: number) =>
    `${percentile(
      waits.map((x) => x.waitedMs),
      p,
    )} ms`;
  lines.push(
    `  person's calls: ${r.callMs.length} done${r.callsUnfinished ? `, ${r.callsUnfinished} not` : ''}; p50 ${sec(percentile(r.callMs, 50))}, p90 ${sec(percentile(r.callMs, 90))}, max ${sec(Math.max(...r.callMs))} (real pace: ${real(percentile(r.callMs, 90))} p90, ${real(Math.max(...r.callMs))} max); idle p50 ${sec(idle)}${goals ? `; goal p90 <= ${sec(goal)}, max <= ${sec(3 * goal)}` : ''}`,
  );
  lines.push(
    `    their ${waits.length} permits waited p50 ${w(50)}, p90 ${w(90)}, max ${w(100)}; on the idle pool p50 ${percentile(r.idleWaits, 50)} ms, max ${Math.max(...r.idleWaits)} ms; one slot ${SLOT_MS} ms`,
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
  keys: [0, 1, 2].flatMap((index) =>
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
    `shared pool: ${KEYS} keys of ${LIMITS.perMinute}/minute and ${LIMITS.perHour}/hour; batches of ${BATCHES.map((b) => `${b.rows} rows (window ${b.window})`).join(', ')} (a weighted run splits their rows by weight) started ${sec(BATCH_EVERY_MS)} apart; a person's call every ${sec(CALL_EVERY_MS)}; tenant ${HEAVY_TENANT} calls every ${sec(HEAVY_EVERY_MS)}; time scale ${TIME_SCALE} (minute ${sec(MINUTE_MS)}, hour ${sec(HOUR_MS)}, slot ${sec(SLOT_MS)})\n\n`,
  );
  const equal = BATCHES.map(() => 1);
  const runs: { mode: SchedulerMode; weights: number[] }[] = [];
  if (RUNS.has('first-come')) runs.push({ mode: 'first-come', weights: equal });
  if (RUNS.has('fair')) runs.push({ mode: 'fair', weights: equal });
  if (RUNS.has('weighted') && WEIGHTS.some((w) => w !== 1))
    runs.push({ mode: 'fair', weights: WEIGHTS });
  for (const [index, { mode, weights }] of runs.entries()) {
    const result = await run(index, mode, weights, emulator, server.address);
    // Every permit of the run, for whoever wants to measure it another way.
    const saved = join(tmpdir(), `pcds-bench-shared-pool-${process.pid}-run${index}.json`);
    writeFileSync(saved, JSON.stringify(result));
    log(`run ${index}: its permits are in ${saved}`);
    process.stdout.write(report(result, mode === 'fair').join('\n') + '\n');
  }
} finally {
  await emulator.stop();
  await server.stop();
}
