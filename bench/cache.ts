// The result cache, printed (never asserted), in one run: a "monthly re-run" of person
// enrichment, where half of the file's distinct people were enriched by an earlier batch and 30%
// of its rows repeat an earlier row respelled, run with the cache beside the same file with the
// cache off (requests and credits per input row, against the goal of at most 0.5 request per
// input row); then the hit path, a batch every row of which the cache answers, in rows/s beside
// the same batch with the cache off, compact and as row workflows. Every duration is scaled by
// one factor (job latency, poll interval, max wait, windows); the emulator's limits are off, as
// in bench/batch.ts, so rows/s measure the orchestrator and the store, not a key's rate.
// Run: npx tsx bench/cache.ts [rows] [timeScale] (10,000 rows, 100 times faster by default;
// a quick run: npx tsx bench/cache.ts 2000)
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareBatch, startBatchWorkflow } from '../src/client/batch-launch.js';
import type { BatchSummary } from '../src/batch/types.js';
import { sampleRows } from '../src/emulator/index.js';
import type { CacheUse } from '../src/calls/cache-policy.js';
import { scaledWaits, startBenchEnv, type BenchEnv } from './batch-env.js';

const ROWS = Number(process.argv[2] ?? 10_000);
/** 100 times faster: a job of about 15 ms instead of 1.5 s, a poll every 10 ms, a max wait of 18 s. */
const TIME_SCALE = Number(process.argv[3] ?? 100);
const WINDOW = 100;
/** Rows-as-workflows batches are slower: the hit path in that mode runs on at most this many. */
const WORKFLOW_ROWS = Math.min(ROWS, 2_000);
const DUPLICATE_SHARE = 0.3;
const EARLIER_SHARE = 0.5;
/** Enough people that the file's distinct rows are distinct people, not the same few again. */
const PEOPLE = Math.max(5_000, ROWS * 2);

const waits = scaledWaits(TIME_SCALE);
let batchNumber = 0;

/** One CSV input of emails. */
function inputFile(emails: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-cache-'));
  const path = join(dir, 'rows.csv');
  writeFileSync(path, ['email', ...emails.map((e) => JSON.stringify(e))].join('\n') + '\n');
  return path;
}

interface Measured {
  summary: BatchSummary;
  seconds: number;
  rowsPerSecond: number;
  submits: number;
  requests: number;
  credits: number;
}

const requestsOf = (env: BenchEnv) =>
  Object.values(env.emulator.stats().requests).reduce((a, b) => a + b, 0);

async function runBatch(
  env: BenchEnv,
  input: string,
  compact: boolean,
  cache: CacheUse,
): Promise<Measured> {
  const prepared = await prepareBatch({
    input,
    output: join(mkdtempSync(join(tmpdir(), 'pcds-bench-cache-out-')), 'out.jsonl'),
    window: WINDOW,
    batchId: `bench-cache-${Date.now()}-${++batchNumber}`,
    pollIntervalMs: waits.pollIntervalMs,
    maxWaitMs: waits.maxWaitMs,
    ...(compact ? { compact: true } : {}),
  });
  const before = env.emulator.stats();
  const requestsBefore = requestsOf(env);
  // From the load into the store: a hit is answered as the rows are read, so the load counts.
  const started = Date.now();
  const handle = await startBatchWorkflow(env.client, env.worker.taskQueue, prepared, {
    store: await env.store.get(),
    cache,
  });
  const summary = await handle.result();
  const seconds = (Date.now() - started) / 1000;
  const after = env.emulator.stats();
  return {
    summary,
    seconds,
    rowsPerSecond: summary.done / seconds,
    submits: after.jobsSubmitted - before.jobsSubmitted,
    requests: requestsOf(env) - requestsBefore,
    credits: after.creditsCharged - before.creditsCharged,
  };
}

function print(key: string, value: string) {
  process.stdout.write(`${key.padEnd(72)}  ${value}\n`);
}

const outcome = (m: Measured) => {
  const s = m.summary;
  return `done ${s.done}, found ${s.found}, empty ${s.empty}, failed ${s.failed}, duplicates ${s.duplicates ?? 0}, cached ${s.cached ?? 0}${s.failed ? ` (${JSON.stringify(s.failedByCode)})` : ''}; ${m.seconds.toFixed(1)} s`;
};

/** The file: distinct people (a fifth unknown to the service), then 30% repeats in capitals. */
function monthlyFile() {
  const repeats = Math.round(ROWS * DUPLICATE_SHARE);
  const distinctCount = ROWS - repeats;
  const seen = new Set<string>();
  const distinct: string[] = [];
  const sample = sampleRows({
    rows: distinctCount * 2,
    unknownShare: 0.2,
    dataset: { people: PEOPLE, companies: 600 },
  });
  for (const { email } of sample) {
    if (distinct.length === distinctCount) break;
    if (seen.has(email.toLowerCase())) continue;
    seen.add(email.toLowerCase());
    distinct.push(email);
  }
  // The sample has fewer people than asked: the rest are addresses the service does not know.
  for (let i = 0; distinct.length < distinctCount; i++)
    distinct.push(`nobody.extra.${i}@unknown.pcds.dev`);
  const respelled = Array.from({ length: repeats }, (_, i) => {
    const e = distinct[(i * 7) % distinct.length];
    // Capitals, all or the first of each part: a cell padded with spaces is not an email address
    // (the row fails validation), so it is no respelling of one.
    return i % 2 === 0 ? e.toUpperCase() : e.replace(/(^|[.@])([a-z])/g, (m) => m.toUpperCase());
  });
  // Every other distinct person: spread through the file, as a month's new rows would be.
  const earlier = distinct
    .filter((_, i) => i % 2 === 0)
    .slice(0, Math.round(distinctCount * EARLIER_SHARE));
  return { rows: [...distinct, ...respelled], distinct, earlier };
}

const runStarted = Date.now();
let partStarted = runStarted;
/** Prints the wall time of the part just ended. */
function partDone(part: string) {
  const now = Date.now();
  print(`wall time: ${part} (s)`, ((now - partStarted) / 1000).toFixed(0));
  partStarted = now;
}

const env = await startBenchEnv({ timeScale: TIME_SCALE, people: PEOPLE });
try {
  const file = monthlyFile();
  const mode = 'compact batch (rows as activities of the batch)';
  process.stdout.write(
    `cache benchmark: ${ROWS} person_enrichment rows (${file.distinct.length} distinct, ` +
      `${ROWS - file.distinct.length} respelled repeats), ${file.earlier.length} enriched earlier; ` +
      `${TIME_SCALE} times faster (poll every ${waits.pollIntervalMs} ms, max wait ${waits.maxWaitMs / 1000} s), ` +
      `window ${WINDOW}, limits off; ${mode}, the faster mode (bench/batch.ts)\n\n`,
  );
  const monthly = inputFile(file.rows);
  partDone('dev server, emulator and worker started');

  process.stderr.write('earlier batch (fills the cache)...\n');
  const earlier = await runBatch(env, inputFile(file.earlier), true, { mode: 'use' });
  print('earlier batch: rows, outcome', outcome(earlier));

  // Without first: mode off neither reads nor fills, so "with" finds the earlier batch's entries only.
  process.stderr.write('re-run, cache off...\n');
  const without = await runBatch(env, monthly, true, { mode: 'off' });
  print('re-run without the cache: outcome', outcome(without));
  process.stderr.write('re-run, cache on...\n');
  const withCache = await runBatch(env, monthly, true, { mode: 'use' });
  print('re-run with the cache: outcome', outcome(withCache));
  const perRow = (n: number) => (n / ROWS).toFixed(3);
  for (const [label, m] of [
    ['without the cache', without],
    ['with the cache', withCache],
  ] as const) {
    print(`re-run ${label}: submits per input row`, perRow(m.submits));
    print(`re-run ${label}: polls per input row`, perRow(m.requests - m.submits));
    print(`re-run ${label}: requests per input row`, perRow(m.requests));
    print(`re-run ${label}: credits per input row`, perRow(m.credits));
    print(`re-run ${label}: rows/s`, m.rowsPerSecond.toFixed(1));
  }
  print('re-run: goal, requests per input row with the cache', '<= 0.500');
  // Polling, a row sent costs its submit and at least one poll: the floor is twice the rows sent.
  print(
    're-run: floor with the cache (2 x rows sent per input row)',
    perRow(2 * withCache.submits),
  );
  print(
    're-run: requests with / without the cache',
    (withCache.requests / Math.max(1, without.requests)).toFixed(3),
  );
  print(
    're-run: credits with / without the cache',
    (withCache.credits / Math.max(1, without.credits)).toFixed(3),
  );

  partDone('monthly re-run (earlier batch, without, with)');

  // The hit path: the same file again, every row now in the cache, beside the cache-off run above.
  process.stderr.write('hit path, compact...\n');
  const hits = await runBatch(env, monthly, true, { mode: 'use' });
  print('all rows cached, compact: outcome', outcome(hits));
  print('all rows cached, compact: requests', String(hits.requests));
  print('all rows cached, compact: rows/s', hits.rowsPerSecond.toFixed(1));
  print('same file, cache off, compact: rows/s', without.rowsPerSecond.toFixed(1));
  print(
    'all rows cached / cache off, compact',
    (hits.rowsPerSecond / without.rowsPerSecond).toFixed(2),
  );

  partDone('hit path, compact');

  const workflowInput = inputFile(file.rows.slice(0, WORKFLOW_ROWS));
  process.stderr.write(
    `hit path, the file's first ${WORKFLOW_ROWS} rows as workflows, cache off...\n`,
  );
  const workflowsOff = await runBatch(env, workflowInput, false, { mode: 'off' });
  print(`${WORKFLOW_ROWS} rows as workflows, cache off: outcome`, outcome(workflowsOff));
  process.stderr.write('hit path, rows as workflows, all cached...\n');
  const workflowsHits = await runBatch(env, workflowInput, false, { mode: 'use' });
  print(`${WORKFLOW_ROWS} rows as workflows, all cached: outcome`, outcome(workflowsHits));
  print(`${WORKFLOW_ROWS} rows as workflows, all cached: requests`, String(workflowsHits.requests));
  print(
    `${WORKFLOW_ROWS} rows as workflows, all cached: rows/s`,
    workflowsHits.rowsPerSecond.toFixed(1),
  );
  print(
    `${WORKFLOW_ROWS} rows as workflows, cache off: rows/s`,
    workflowsOff.rowsPerSecond.toFixed(1),
  );
  print(
    'all rows cached / cache off, rows as workflows',
    (workflowsHits.rowsPerSecond / workflowsOff.rowsPerSecond).toFixed(2),
  );
  partDone('hit path, rows as workflows');
} finally {
  await env.stop();
}
print('wall time of the whole run (s)', ((Date.now() - runStarted) / 1000).toFixed(0));
