// A batch of 100,000 rows against the emulator with latency and limits off (not run in CI):
// prints rows/s and the number of runs (continue-as-new), and checks the store holds exactly
// 100,000 distinct rows' results. Run: npx tsx bench/batch-100k.ts [rows] [window]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareBatch, startBatchWorkflow } from '../src/client/batch-launch.js';
import { sampleRows } from '../src/emulator/index.js';
import { startBenchEnv } from './batch-env.js';

const ROWS = Number(process.argv[2] ?? 100_000);
const WINDOW = Number(process.argv[3] ?? 200);

const env = await startBenchEnv();
try {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-100k-'));
  const input = join(dir, 'rows.csv');
  const emails = sampleRows({ rows: Math.min(ROWS, 5000), unknownShare: 0.2 }).map((r) => r.email);
  // Distinct rows: the same identities repeated are still distinct rows of the file.
  writeFileSync(
    input,
    ['email', ...Array.from({ length: ROWS }, (_, i) => emails[i % emails.length])].join('\n') +
      '\n',
  );
  const output = join(dir, 'out.jsonl');
  const prepared = await prepareBatch({
    input,
    output,
    window: WINDOW,
    batchId: `bench100k-${Date.now()}`,
    pollIntervalMs: 50,
  });
  const started = Date.now();
  const handle = await startBatchWorkflow(env.client, env.worker.taskQueue, prepared, {
    store: await env.store.get(),
  });
  const timer = setInterval(() => {
    handle
      .query('batchProgress')
      .then((p) => process.stderr.write(`${JSON.stringify(p).slice(0, 200)}\n`))
      .catch(() => undefined);
  }, 30_000);
  const summary = await handle.result();
  clearInterval(timer);
  const seconds = (Date.now() - started) / 1000;
  // A stored batch's results are in the store (workers write no file): read them back by page.
  const store = await env.store.get();
  const rows = new Set<number>();
  let lines = 0;
  let after: number | undefined;
  for (;;) {
    const page = await store.results(prepared.input.batchId, {
      ...(after !== undefined ? { after } : {}),
      limit: 10_000,
    });
    lines += page.lines.length;
    for (const l of page.lines) rows.add(l.row);
    if (page.next === undefined) break;
    after = page.next as number;
  }
  process.stdout.write(
    `rows ${ROWS}, window ${WINDOW}: ${(summary.done / seconds).toFixed(1)} rows/s over ${seconds.toFixed(0)} s, ` +
      `${summary.runs} runs, ${(summary.batchHistoryEvents / summary.done).toFixed(2)} batch history events per row\n` +
      `output: ${lines} lines, ${rows.size} distinct rows -> ${lines === ROWS && rows.size === ROWS ? 'OK' : 'MISMATCH'}\n`,
  );
  if (lines !== ROWS || rows.size !== ROWS) process.exitCode = 1;
} finally {
  await env.stop();
}
