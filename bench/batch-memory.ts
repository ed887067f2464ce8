// Memory of one process holding a worker and the typed client while a compact batch of rows from
// code runs (startBatch({ rows, compact: true, window: 200 })), printed (never asserted): rows/s,
// RSS at start, peak and end with the V8 heap beside it, and both after a full garbage collection
// at the end (what the process holds on to), at several sizes. The emulator runs in the same
// process with its limits and latency off and a 30 s job retention, so its own memory stays flat;
// the store is the embedded one; every row is sent (the sample's identities repeated, no dedupe,
// no cache). Each size runs in a process of its own, so each start and peak is its own: memory
// that grows from the smaller size to the larger grows with the rows.
// Run: npx tsx bench/batch-memory.ts [rows,rows...] (2,000, 20,000 and 50,000 by default);
// PCDS_BENCH_TRACE=1 prints the rows done, RSS and heap every 15 s; PCDS_BENCH_HEAP_SNAPSHOT=<dir>
// writes heap snapshots of each process at its end (its main thread's, and its workflow thread's).
import { MemorySampler, writeHeapSnapshots } from './memory-report.mjs';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createPcdsClient } from '../src/client.js';
import { sampleRows } from '../src/emulator/index.js';
import { dataConverterFromSettings } from '../src/temporal/data-converter.js';
import { startBenchEnv } from './batch-env.js';

const MB = 2 ** 20;

interface SizeFigures {
  rows: number;
  rowsPerSecond: number;
  rssStartMb: number;
  rssPeakMb: number;
  rssEndMb: number;
  heapStartMb: number;
  heapPeakMb: number;
  heapEndMb: number;
  /** After a full garbage collection at the end. */
  rssRetainedMb: number;
  heapRetainedMb: number;
  runs: number;
}

/** One size, in this process: prints its figures as one JSON line. */
async function measureOne(rows: number): Promise<void> {
  const env = await startBenchEnv({ jobRetentionMs: 30_000, noCache: true });
  const client = await createPcdsClient({
    connection: env.connection,
    taskQueue: env.worker.taskQueue,
    store: env.store,
    dataConverter: dataConverterFromSettings(env.config),
    defaults: { pollIntervalMs: 50, cache: false },
  });
  try {
    const emails = sampleRows({ rows: Math.min(rows, 5000), unknownShare: 0.2 }).map(
      (r) => r.email,
    );
    global.gc?.();
    const sampler = new MemorySampler(() => process.memoryUsage());
    const start = sampler.sample();
    const started = Date.now();
    const batch = await client.startBatch({
      rows: Array.from({ length: rows }, (_, i) => ({ email: emails[i % emails.length] })),
      compact: true,
      window: 200,
      // Every row is sent: the same identities repeated are still rows of their own.
      dedupe: false,
    });
    const trace = process.env.PCDS_BENCH_TRACE
      ? setInterval(() => {
          const { rss, heapUsed } = process.memoryUsage();
          void batch
            .status()
            .then((s) =>
              process.stderr.write(
                `${Math.round((Date.now() - started) / 1000)} s, done ${s.progress?.done ?? '?'}, ` +
                  `RSS ${(rss / MB).toFixed(0)} MB, heap ${(heapUsed / MB).toFixed(0)} MB\n`,
              ),
            );
        }, 15_000)
      : undefined;
    const summary = await batch.result();
    clearInterval(trace);
    const seconds = (Date.now() - started) / 1000;
    const end = sampler.stop();
    // What the heap keeps once garbage is collected: memory the batch holds on to.
    global.gc?.();
    const retained = process.memoryUsage();
    const snapshotDir = process.env.PCDS_BENCH_HEAP_SNAPSHOT;
    if (snapshotDir) await writeHeapSnapshots(snapshotDir, `batch-memory-${rows}`);
    const figures: SizeFigures = {
      rows,
      rowsPerSecond: summary.done / seconds,
      rssStartMb: start.rss / MB,
      rssPeakMb: sampler.peak.rss / MB,
      rssEndMb: end.rss / MB,
      heapStartMb: start.heapUsed / MB,
      heapPeakMb: sampler.peak.heapUsed / MB,
      heapEndMb: end.heapUsed / MB,
      rssRetainedMb: retained.rss / MB,
      heapRetainedMb: retained.heapUsed / MB,
      runs: summary.runs,
    };
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  } finally {
    await client.close();
    await env.stop();
  }
}

/** Runs one size in a child process and reads its line of figures. */
function measureInChild(rows: number): Promise<SizeFigures> {
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--one', String(rows)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let figures: SizeFigures | undefined;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('{')) figures = JSON.parse(line) as SizeFigures;
    });
    child.once('exit', (code) =>
      figures ? resolve(figures) : reject(new Error(`the run of ${rows} rows exited with ${code}`)),
    );
  });
}

if (process.argv[2] === '--one') {
  await measureOne(Number(process.argv[3]));
} else {
  const sizes = (process.argv[2] ?? '2000,20000,50000').split(',').map(Number);
  const mb = (n: number) => n.toFixed(0).padStart(6);
  process.stdout.write(
    '  rows   rows/s  RSS start  RSS peak  RSS end  heap start  heap peak  heap end  after GC (RSS/heap)  runs\n',
  );
  for (const rows of sizes) {
    const f = await measureInChild(rows);
    process.stdout.write(
      `${String(rows).padStart(7)}  ${f.rowsPerSecond.toFixed(1).padStart(6)}  ` +
        `${mb(f.rssStartMb)} MB  ${mb(f.rssPeakMb)} MB ${mb(f.rssEndMb)} MB  ` +
        `${mb(f.heapStartMb)} MB  ${mb(f.heapPeakMb)} MB ${mb(f.heapEndMb)} MB  ` +
        `${mb(f.rssRetainedMb)} / ${mb(f.heapRetainedMb)} MB  ${f.runs}\n`,
    );
  }
}
