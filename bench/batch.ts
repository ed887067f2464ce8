// Batch throughput, printed (never asserted): rows/s of a durable batch of 2,000 enrichments
// beside a plain non-durable concurrent loop against the same emulator, and beside the dev
// server's own ceiling (one-activity workflows started as fast as possible), in the same run;
// plus history events per row, for rows run as workflows and for a compact batch (rows run as
// activities of the batch); then requests and credits per input row of an input where 30% of the
// rows repeat an earlier one (respelled), with duplicates sent once beside every row sent.
// Run: npx tsx bench/batch.ts [rows] [window] (2,000 rows by default; 10,000: npx tsx bench/batch.ts 10000)
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { prepareBatch, startBatchWorkflow } from '../src/client/batch-launch.js';
import { rowWorkflowId } from '../src/contract/workflow-ids.js';
import { sampleRows } from '../src/emulator/index.js';
import { startBenchEnv, type BenchEnv } from './batch-env.js';
import { devServerCeiling } from './ceiling.js';

const ROWS = Number(process.argv[2] ?? 2000);
const WINDOW = Number(process.argv[3] ?? 100);
const CEILING_WORKFLOWS = Math.min(ROWS, 1000);

async function plainLoop(env: BenchEnv, emails: string[]): Promise<number> {
  const pool = new Pool(env.emulator.url, { connections: 64 });
  const headers = {
    'content-type': 'application/json',
    'x-api-key': env.emulator.devKey.key,
    'x-api-secret': env.emulator.devKey.secret,
  };
  let next = 0;
  const one = async (email: string) => {
    const res = await pool.request({
      method: 'POST',
      path: '/person/enrichment',
      headers,
      body: JSON.stringify({ email }),
    });
    const body = (await res.body.json()) as { data: { request_id: string } };
    for (;;) {
      const r = await pool.request({
        method: 'GET',
        path: `/person/enrichment?request_id=${body.data.request_id}`,
        headers,
      });
      const b = (await r.body.json()) as { data?: { completed?: boolean; status?: string } };
      if (
        b.data?.completed !== false &&
        !['queued', 'processing', 'pending'].includes(b.data?.status ?? '')
      )
        return;
      await new Promise((res2) => setTimeout(res2, 50));
    }
  };
  const started = Date.now();
  await Promise.all(
    Array.from({ length: WINDOW }, async () => {
      while (next < emails.length) await one(emails[next++]);
    }),
  );
  await pool.close();
  return emails.length / ((Date.now() - started) / 1000);
}

async function durableBatch(env: BenchEnv, emails: string[], compact: boolean, dedupe = false) {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-batch-'));
  const input = join(dir, 'rows.csv');
  writeFileSync(input, ['email', ...emails].join('\n') + '\n');
  const prepared = await prepareBatch({
    input,
    output: join(dir, 'out.jsonl'),
    window: WINDOW,
    batchId: `bench-${Date.now()}`,
    pollIntervalMs: 50,
    ...(compact ? { compact: true } : {}),
    // The throughput figures send every row (the sample repeats some people); the spend
    // figures below compare both.
    ...(dedupe ? {} : { dedupe: false }),
  });
  const started = Date.now();
  const handle = await startBatchWorkflow(env.client, env.worker.taskQueue, prepared, {
    store: await env.store.get(),
  });
  const summary = await handle.result();
  const seconds = (Date.now() - started) / 1000;
  // Children's histories are alike: a sample gives the per-row figure. A compact batch has none.
  const sample = compact
    ? []
    : Array.from({ length: 20 }, (_, i) => 1 + Math.floor((i * emails.length) / 20));
  let childEvents = 0;
  for (const row of sample) {
    const d = await env.client.workflow
      .getHandle(rowWorkflowId(prepared.input.batchId, row, prepared.input.rowIdScheme))
      .describe();
    childEvents += d.historyLength;
  }
  return {
    rowsPerSecond: summary.done / seconds,
    parentEventsPerRow: summary.batchHistoryEvents / summary.done,
    childEventsPerRow: sample.length ? childEvents / sample.length : 0,
    workerRssMb: process.memoryUsage().rss / 2 ** 20,
    runs: summary.runs,
    summary,
  };
}

const env = await startBenchEnv();
try {
  const emails = sampleRows({ rows: ROWS, unknownShare: 0.2 }).map((r) => r.email);
  process.stderr.write(`rows ${ROWS}, window ${WINDOW}; measuring the dev-server ceiling...\n`);
  const ceiling = await devServerCeiling(env.client, env.nativeConnection, CEILING_WORKFLOWS);
  process.stderr.write('plain loop...\n');
  const plain = await plainLoop(env, emails);
  // Each figure is printed as it is measured: a long run (10,000 rows) gives what it has.
  const rows = {
    push(...measured: string[][]) {
      for (const [k, v] of measured) process.stdout.write(`${k.padEnd(68)}  ${v}\n`);
    },
  };
  rows.push(
    ['dev server ceiling (1-activity workflows/s)', ceiling.toFixed(1)],
    ['plain concurrent loop (rows/s, not durable)', plain.toFixed(1)],
  );
  const results = [];
  // Compact first: it is the faster of the two, so its figures come early in a long run.
  for (const compact of [true, false]) {
    const mode = compact ? 'compact batch (rows as activities)' : 'batch (rows as workflows)';
    process.stderr.write(`${mode}...\n`);
    const batch = await durableBatch(env, emails, compact);
    results.push(batch);
    rows.push(
      [`${mode}: rows/s`, batch.rowsPerSecond.toFixed(1)],
      [`${mode}: / ceiling`, (batch.rowsPerSecond / ceiling).toFixed(2)],
      [`${mode}: / plain loop`, (batch.rowsPerSecond / plain).toFixed(3)],
      [`${mode}: events per row, batch workflow`, batch.parentEventsPerRow.toFixed(2)],
      [`${mode}: events per row, row workflow`, batch.childEventsPerRow.toFixed(1)],
      [
        `${mode}: events per row, total`,
        (batch.parentEventsPerRow + batch.childEventsPerRow).toFixed(1),
      ],
      [`${mode}: runs (continue-as-new)`, String(batch.runs)],
      [`${mode}: worker RSS after (MB)`, batch.workerRssMb.toFixed(0)],
    );
  }
  // Spend: 70% distinct people, 30% of the rows repeating one of them in capitals.
  const distinct = [...new Set(emails)].slice(0, Math.round(ROWS * 0.7));
  const repeats = Array.from({ length: ROWS - distinct.length }, (_, i) =>
    distinct[(i * 7) % distinct.length].toUpperCase(),
  );
  const spendInput = [...distinct, ...repeats];
  // The sample holds fewer distinct people than a large input needs: the share is printed as is.
  const share = `${Math.round((repeats.length / spendInput.length) * 100)}% duplicates`;
  for (const dedupe of [false, true]) {
    const mode = dedupe ? 'duplicates sent once' : 'every row sent';
    process.stderr.write(`spend, ${mode}...\n`);
    const before = env.emulator.stats();
    const requestsBefore = Object.values(before.requests).reduce((a, b) => a + b, 0);
    const batch = await durableBatch(env, spendInput, true, dedupe);
    const after = env.emulator.stats();
    const requests = Object.values(after.requests).reduce((a, b) => a + b, 0) - requestsBefore;
    const n = spendInput.length;
    rows.push(
      [
        `${share}, ${mode}: submits per input row`,
        ((after.jobsSubmitted - before.jobsSubmitted) / n).toFixed(3),
      ],
      [`${share}, ${mode}: requests per input row`, (requests / n).toFixed(3)],
      [
        `${share}, ${mode}: credits per input row`,
        ((after.creditsCharged - before.creditsCharged) / n).toFixed(3),
      ],
      [`${share}, ${mode}: rows/s`, batch.rowsPerSecond.toFixed(1)],
    );
    results.push(batch);
  }
  for (const batch of results)
    process.stdout.write(
      `found ${batch.summary.found}, empty ${batch.summary.empty}, failed ${batch.summary.failed}\n`,
    );
} finally {
  await env.stop();
}
