// Memory and throughput as a batch grows, printed (never asserted), in the production topology on
// one machine: the store on PostgreSQL, two `pcds worker` processes and the `pcds` CLI in a third
// (`pcds batch start` loads the CSV, watches the batch and writes its output), over a dev server,
// with the emulator in a process of its own (limits off, latency scaled by --time-scale, every
// wait scaled alike). For each size, compact (rows as activities) and rows as workflows: rows/s
// beside the dev server's ceiling measured in the same run, each worker's peak RSS and heap while
// the batch runs (fresh workers for each size, so each peak is that size's), the CLI's peak RSS
// and heap, the size of the state the batch carried into its last run (the continue-as-new
// input, read from history), and the time and peak RSS and heap of exports of the finished batch
// to CSV and Parquet (`pcds batch export`). Beside each heap peak (garbage included), the live
// heap: the most a full garbage collection left, what the process holds on to.
// The input repeats the emulator's sample of identities, sent row by row (`--no-dedupe`,
// `--no-cache`), so rows/s measure the same work at every size. The processes run the compiled
// CLI (built first). On a 2-core machine the full run takes hours (see docs/benchmarks.md).
//
//   npx tsx bench/scale.ts                      10,000, 100,000 and 1,000,000 rows compact,
//                                               100,000 as workflows (hours on a small machine)
//   npx tsx bench/scale.ts --compact 10000,20000 --workflows 10000     a quick run
//   flags: --workers 2 --window 200 --time-scale 100 --store postgres|sqlite
//          --ceiling-workflows 1000 (a round: the ceiling is the median of three, measured first
//          and again after each size) --trace (memory every 30 s) --snapshots (heap snapshots
//          of each worker at the end of each size, into the run's folder) --keep (keep that
//          folder, with env.json: the settings its processes had)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Connection, type Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { BatchSummary } from '../src/batch/types.js';
import { batchWorkflowId } from '../src/contract/workflow-ids.js';
import { queryProgress } from '../src/client/batch-launch.js';
import { loadConfig } from '../src/config.js';
import { sampleRows } from '../src/emulator/index.js';
import { projectRoot } from '../src/temporal/cli-binary.js';
import { temporalClient } from '../src/temporal/data-converter.js';
import { freePort, startDevServer, type DevServer } from '../src/temporal/index.js';
import { createDatabase, startPostgres, stopPostgres } from '../scripts/postgres.js';
import { scaledWaits } from './batch-env.js';
import { devServerCeiling } from './ceiling.js';
import type { MemoryFigures, MemoryReport } from './memory-report.mjs';

const { values: flags } = parseArgs({
  options: {
    compact: { type: 'string', default: '10000,100000,1000000' },
    workflows: { type: 'string', default: '100000' },
    workers: { type: 'string', default: '2' },
    window: { type: 'string', default: '200' },
    'time-scale': { type: 'string', default: '100' },
    store: { type: 'string', default: 'postgres' },
    'ceiling-workflows': { type: 'string', default: '1000' },
    trace: { type: 'boolean', default: false },
    snapshots: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
  },
});

const sizesOf = (list: string) =>
  list
    .split(',')
    .filter((s) => s.trim() !== '' && s.trim() !== '0')
    .map((s) => Number(s.replace(/_/g, '')));
const COMPACT_SIZES = sizesOf(flags.compact);
const WORKFLOW_SIZES = sizesOf(flags.workflows);
const WORKERS = Number(flags.workers);
const WINDOW = Number(flags.window);
const TIME_SCALE = Number(flags['time-scale']);
const CEILING_WORKFLOWS = Number(flags['ceiling-workflows']);
if (flags.store !== 'postgres' && flags.store !== 'sqlite')
  throw new Error('--store: postgres or sqlite');

const root = projectRoot();
const PCDS = join(root, 'bin', 'pcds.mjs');
const MEMORY_REPORT = join(root, 'bench', 'memory-report.mjs');
const MB = 2 ** 20;
const mbOf = (bytes: number | undefined) => (bytes === undefined ? undefined : bytes / MB);
/** A figure in MB, or "-" for a process that made no full garbage collection. */
const mbText = (mb: number | undefined) => (mb === undefined ? '-' : mb.toFixed(0));

/** The processes run dist/: built first (incremental, quick when it is up to date). */
function build(): void {
  const built = spawnSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`npm run build failed:\n${built.stdout}${built.stderr}`);
}

/** A process of the topology, its memory reported by bench/memory-report.mjs. */
class Measured {
  readonly child: ChildProcess;
  readonly exited: Promise<number>;
  private readonly memoryFile: string;

  constructor(
    readonly name: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    readonly dir: string,
  ) {
    this.memoryFile = join(dir, `${name}.memory.json`);
    const log = createWriteStream(join(dir, `${name}.log`));
    this.child = spawn(process.execPath, ['--import', MEMORY_REPORT, PCDS, ...args], {
      cwd: root,
      env: { ...env, PCDS_BENCH_MEMORY_FILE: this.memoryFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.pipe(log);
    this.child.stderr!.pipe(log);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 0))),
    );
  }

  /** Resolves at the first line of its output that matches `pattern`. */
  waitFor(pattern: RegExp): Promise<string> {
    return new Promise((resolve, reject) => {
      const lines = createInterface({ input: this.child.stderr! });
      const out = createInterface({ input: this.child.stdout! });
      const seen = (line: string) => pattern.test(line) && resolve(line);
      lines.on('line', seen);
      out.on('line', seen);
      void this.exited.then((code) =>
        reject(new Error(`${this.name} exited with ${code}; see ${this.dir}/${this.name}.log`)),
      );
    });
  }

  /**
   * Samples what the process reports from now on (its file, every half second): a worker's
   * start, which bundles the workflows, is left out of its figures for a batch. The peaks, and
   * the median RSS over the second half of the samples (the level it settled at, which one
   * moment of garbage collection does not move).
   */
  sampleFromNow(): () => { peak: MemoryFigures; settledRss: number } {
    const peak: MemoryFigures = { rss: 0, heapUsed: 0 };
    const rss: number[] = [];
    const timer = setInterval(() => {
      const now = this.memory()?.now;
      if (!now) return;
      peak.rss = Math.max(peak.rss, now.rss);
      peak.heapUsed = Math.max(peak.heapUsed, now.heapUsed);
      rss.push(now.rss);
    }, 500);
    timer.unref();
    return () => {
      clearInterval(timer);
      const late = rss.slice(Math.floor(rss.length / 2)).sort((a, b) => a - b);
      return { peak, settledRss: late[Math.floor(late.length / 2)] ?? 0 };
    };
  }

  memory(): MemoryReport | undefined {
    try {
      return JSON.parse(readFileSync(this.memoryFile, 'utf8')) as MemoryReport;
    } catch {
      return undefined;
    }
  }

  async stop(): Promise<MemoryReport | undefined> {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
    await this.exited;
    return this.memory();
  }
}

/** A CSV of `rows` emails (the sample's identities, repeated: every row is sent). */
async function writeInput(path: string, rows: number): Promise<void> {
  const emails = sampleRows({ rows: Math.min(rows, 5000), unknownShare: 0.2 }).map((r) => r.email);
  const out = createWriteStream(path);
  out.write('email\n');
  for (let i = 0; i < rows; i += 10_000) {
    const n = Math.min(10_000, rows - i);
    const chunk = Array.from({ length: n }, (_, j) => emails[(i + j) % emails.length]).join('\n');
    if (!out.write(`${chunk}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** Bytes of the input each run of a batch started with: the state carried from the run before. */
async function carriedInputSizes(client: Client, batchId: string): Promise<number[]> {
  const workflowId = batchWorkflowId(batchId);
  const runs: { runId: string; startTime: Date }[] = [];
  for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs.push({ runId: run.runId, startTime: run.startTime });
  runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  const sizes: number[] = [];
  for (const { runId } of runs.slice(1)) {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1,
    });
    const payloads =
      page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
    sizes.push(payloads.reduce((n, p) => n + (p.data?.length ?? 0), 0));
  }
  return sizes;
}

interface RunFigures {
  mode: 'compact' | 'workflows';
  rows: number;
  rowsPerSecond: number;
  runs: number;
  /** Peaks while the batch ran, and the RSS it settled at (median of its second half). */
  /** liveMb: the most heap a full garbage collection left (see bench/memory-report.mjs). */
  workers: { rssMb: number; heapMb: number; settledRssMb: number; liveMb?: number }[];
  cliRssMb: number;
  cliHeapMb: number;
  cliLiveMb?: number;
  cliSeconds: number;
  /** From the CLI's start to the batch's: reading the file into the store, the plan, the start. */
  loadSeconds: number;
  /** From the batch's end to the CLI's: the JSONL and the CSV written from the store. */
  outputSeconds: number;
  carriedLastBytes?: number;
  carriedMaxBytes?: number;
  exports: { format: string; seconds: number; rssMb: number; heapMb: number; liveMb?: number }[];
}

const env = await (async () => {
  build();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = mkdtempSync(join(tmpdir(), 'pcds-scale-'));
  const stops: (() => Promise<void> | void)[] = [];
  const log = (line: string) => process.stderr.write(`[scale] ${line}\n`);
  log(`folder ${dir}`);
  let storeUrl = `sqlite:${join(dir, 'store.sqlite')}`;
  if (flags.store === 'postgres') {
    const pg = {
      dataDir: join(dir, 'pg', 'data'),
      socketDir: join(dir, 'pg-socket'),
      port: await freePort(),
      logFile: join(dir, 'pg-log', 'postgresql.log'),
      user: 'pcds',
      password: randomBytes(12).toString('hex'),
      within: tmpdir(),
      settings: { max_connections: 100, shared_buffers: '256MB' },
    };
    startPostgres(pg);
    stops.push(() => stopPostgres(pg.dataDir));
    createDatabase(pg, 'pcds_store');
    storeUrl = `postgres://${pg.user}:${pg.password}@127.0.0.1:${pg.port}/pcds_store`;
    log(`PostgreSQL on 127.0.0.1:${pg.port}`);
  }
  const server: DevServer = await startDevServer({
    headless: true,
    logLevel: 'error',
    // On disk: a million rows' histories would not fit in the memory of an in-memory server.
    dbFile: join(dir, 'temporal', 'dev.sqlite'),
  });
  stops.push(() => server.stop());
  const emulatorConfig = join(dir, 'emulator.json');
  const key = { key: 'pcds_scale_key', secret: 'pcds_scale_secret' };
  writeFileSync(
    emulatorConfig,
    JSON.stringify({
      port: 0,
      timeScale: TIME_SCALE,
      limits: { enabled: false },
      // A minute of the bench's own time (the emulator takes it at the real pace and scales it):
      // long enough for any poll, and the emulator's own memory stays flat.
      jobRetentionMs: Math.round(60_000 * TIME_SCALE),
      devKey: { ...key, credits: null },
    }),
  );
  const emulator = new Measured('emulator', ['emulator', '--config', emulatorConfig], {}, dir);
  stops.push(() => emulator.stop().then(() => undefined));
  const banner = await emulator.waitFor(/listening on http/);
  const emulatorUrl = /listening on (\S+)/.exec(banner)![1];
  const waits = scaledWaits(TIME_SCALE);
  const processEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    // glibc's malloc arenas (one per thread by default) weigh on a process's RSS: set in the
    // bench's environment, the processes it measures get it too.
    ...(process.env.MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX } : {}),
    PCDS_TEMPORAL_ADDRESS: server.address,
    PCDS_TASK_QUEUE: 'scale',
    PCDS_STORE_URL: storeUrl,
    PCDS_DATA_DIR: join(dir, 'data'),
    PCDS_BASE_URL: emulatorUrl,
    PCDS_API_KEY: key.key,
    PCDS_API_SECRET: key.secret,
    PCDS_THROTTLE: 'off',
    PCDS_THROTTLE_TIME_SCALE: String(TIME_SCALE),
    PCDS_POLL_INTERVAL_MS: String(waits.pollIntervalMs),
    PCDS_MAX_WAIT_MS: String(waits.maxWaitMs),
    PCDS_HTTP_CONNECTIONS: '64',
    PCDS_CACHE: 'off',
    PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    PCDS_ID_SECRET: randomBytes(32).toString('hex'),
  };
  const config = loadConfig(processEnv);
  // A kept folder can be read again (an export of its store, say): its settings, secrets
  // included, only in the folder and only for its owner.
  if (flags.keep) {
    writeFileSync(
      join(dir, 'env.json'),
      JSON.stringify(
        {
          ...processEnv,
          PCDS_STORE_PG_DATA: flags.store === 'postgres' ? join(dir, 'pg', 'data') : undefined,
        },
        null,
        2,
      ),
      { mode: 0o600 },
    );
  }
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  stops.push(() => nativeConnection.close());
  const connection = await Connection.connect({ address: server.address });
  stops.push(() => connection.close());
  const client = temporalClient(connection, config);
  return {
    dir,
    log,
    processEnv,
    client,
    nativeConnection,
    async stop() {
      for (const stop of stops.reverse()) await stop();
      if (!flags.keep) rmSync(dir, { recursive: true, force: true });
    },
  };
})();

/** One batch of `rows` rows, compact or as workflows, on fresh workers. */
async function measureBatch(mode: 'compact' | 'workflows', rows: number): Promise<RunFigures> {
  const { dir, log, processEnv, client } = env;
  const batchId = `scale-${mode}-${rows}-${Date.now()}`;
  const input = join(dir, `${batchId}.csv`);
  await writeInput(input, rows);
  const workers = Array.from(
    { length: WORKERS },
    (_, i) =>
      new Measured(
        `${batchId}-worker${i + 1}`,
        ['worker'],
        {
          ...processEnv,
          ...(flags.snapshots ? { PCDS_BENCH_HEAP_SNAPSHOT: dir } : {}),
        },
        dir,
      ),
  );
  await Promise.all(workers.map((w) => w.waitFor(/worker polling task queue/)));
  log(`${mode}, ${rows} rows: workers up, starting the CLI`);
  const workerSamples = workers.map((w) => w.sampleFromNow());
  const started = Date.now();
  const cli = new Measured(
    `${batchId}-cli`,
    [
      'batch',
      'start',
      '--input',
      input,
      '--output',
      join(dir, `${batchId}.out.csv`),
      '--id',
      batchId,
      '--window',
      String(WINDOW),
      ...(mode === 'compact' ? ['--compact'] : []),
      '--no-dedupe',
      '--no-cache',
      '--no-estimate',
    ],
    processEnv,
    dir,
  );
  const trace = flags.trace
    ? setInterval(() => {
        const handle = client.workflow.getHandle(batchWorkflowId(batchId));
        void queryProgress(handle)
          .then((p) => p.done)
          .catch(() => '?')
          .then((done) => {
            const mem = [...workers, cli].map((p) => {
              const m = p.memory()?.now;
              return m ? `${(m.rss / MB).toFixed(0)}/${(m.heapUsed / MB).toFixed(0)}` : '-';
            });
            log(
              `${Math.round((Date.now() - started) / 1000)} s, done ${done}, RSS/heap MB ${mem.join(' ')}`,
            );
          });
      }, 30_000)
    : undefined;
  const code = await cli.exited;
  clearInterval(trace);
  const cliSeconds = (Date.now() - started) / 1000;
  if (code !== 0) throw new Error(`the CLI exited with ${code}; see ${dir}/${batchId}-cli.log`);
  const summary = (await client.workflow
    .getHandle(batchWorkflowId(batchId))
    .result()) as BatchSummary;
  const workerMemory = workerSamples.map((sampled) => sampled());
  const workerLive = workers.map((w) => w.memory()?.liveHeap);
  const carried = await carriedInputSizes(client, batchId);
  if (flags.snapshots) {
    // Taken after the peaks: writing a snapshot takes memory of its own.
    for (const w of workers) w.child.kill('SIGUSR2');
    await sleep(20_000);
  }
  await Promise.all(workers.map((w) => w.stop()));
  const exports = [];
  for (const format of ['csv', 'parquet']) {
    const at = Date.now();
    const exporter = new Measured(
      `${batchId}-export-${format}`,
      ['batch', 'export', batchId, '--output', join(dir, `${batchId}.export.${format}`)],
      processEnv,
      dir,
    );
    if ((await exporter.exited) !== 0) throw new Error(`the ${format} export failed`);
    exports.push({
      format,
      seconds: (Date.now() - at) / 1000,
      rssMb: (exporter.memory()?.peak.rss ?? 0) / MB,
      heapMb: (exporter.memory()?.peak.heapUsed ?? 0) / MB,
      liveMb: mbOf(exporter.memory()?.liveHeap),
    });
  }
  for (const f of [input, join(dir, `${batchId}.out.csv`), join(dir, `${batchId}.out.csv.jsonl`)])
    rmSync(f, { force: true });
  return {
    mode,
    rows,
    rowsPerSecond: summary.rowsPerSecond,
    runs: summary.runs,
    workers: workerMemory.map((m, i) => ({
      liveMb: mbOf(workerLive[i]),
      rssMb: m.peak.rss / MB,
      heapMb: m.peak.heapUsed / MB,
      settledRssMb: m.settledRss / MB,
    })),
    cliRssMb: (cli.memory()?.peak.rss ?? 0) / MB,
    cliHeapMb: (cli.memory()?.peak.heapUsed ?? 0) / MB,
    cliLiveMb: mbOf(cli.memory()?.liveHeap),
    cliSeconds,
    loadSeconds: (Date.parse(summary.startedAt) - started) / 1000,
    outputSeconds: (started + cliSeconds * 1000 - Date.parse(summary.finishedAt)) / 1000,
    ...(carried.length > 0
      ? { carriedLastBytes: carried[carried.length - 1], carriedMaxBytes: Math.max(...carried) }
      : {}),
    exports,
  };
}

const line = (label: string, value: string) =>
  process.stdout.write(`${label.padEnd(72)}  ${value}\n`);

try {
  // Three rounds, their median taken: one round's figure varies by a fifth from run to run.
  const measureCeiling = async (label: string) => {
    env.log(`measuring the dev server's ceiling (3 x ${CEILING_WORKFLOWS} one-activity workflows)`);
    const rounds: number[] = [];
    for (let i = 0; i < 3; i++)
      rounds.push(await devServerCeiling(env.client, env.nativeConnection, CEILING_WORKFLOWS));
    const median = [...rounds].sort((a, b) => a - b)[1];
    line(
      `${label} (1-activity workflows/s, median of 3 rounds)`,
      `${median.toFixed(1)} (${rounds.map((r) => r.toFixed(1)).join(', ')})`,
    );
    return median;
  };
  const ceiling = await measureCeiling('dev server ceiling');
  const results: RunFigures[] = [];
  const runs: ['compact' | 'workflows', number][] = [
    ...COMPACT_SIZES.map((n): ['compact', number] => ['compact', n]),
    ...WORKFLOW_SIZES.map((n): ['workflows', number] => ['workflows', n]),
  ];
  for (const [mode, rows] of runs) {
    const f = await measureBatch(mode, rows);
    results.push(f);
    const label = `${mode === 'compact' ? 'compact' : 'rows as workflows'}, ${rows} rows`;
    line(
      `${label}: rows/s (/ ceiling)`,
      `${f.rowsPerSecond.toFixed(1)} (${(f.rowsPerSecond / ceiling).toFixed(2)})`,
    );
    // The server holds this size's histories now, and a dev server on SQLite slows as they grow:
    // its ceiling measured again shows how much. The goals keep the ceiling measured first.
    const after = await measureCeiling(`${label}: dev server ceiling after it`);
    line(`${label}: rows/s / ceiling after it`, (f.rowsPerSecond / after).toFixed(2));
    f.workers.forEach((w, i) =>
      line(
        `${label}: worker ${i + 1} peak RSS / heap / live heap, settled RSS (MB)`,
        `${w.rssMb.toFixed(0)} / ${w.heapMb.toFixed(0)} / ${mbText(w.liveMb)}, ${w.settledRssMb.toFixed(0)}`,
      ),
    );
    line(
      `${label}: CLI load and start, output written after the end (s)`,
      `${f.loadSeconds.toFixed(0)}, ${f.outputSeconds.toFixed(0)}`,
    );
    line(
      `${label}: CLI peak RSS / heap / live heap (MB), wall time (s)`,
      `${f.cliRssMb.toFixed(0)} / ${f.cliHeapMb.toFixed(0)} / ${mbText(f.cliLiveMb)}, ${f.cliSeconds.toFixed(0)}`,
    );
    line(`${label}: runs (continue-as-new)`, String(f.runs));
    if (f.carriedLastBytes !== undefined)
      line(
        `${label}: continue-as-new input, last run / largest (bytes)`,
        `${f.carriedLastBytes} / ${f.carriedMaxBytes}`,
      );
    for (const e of f.exports)
      line(
        `${label}: export to ${e.format} (s, peak RSS / heap / live heap MB)`,
        `${e.seconds.toFixed(1)}, ${e.rssMb.toFixed(0)} / ${e.heapMb.toFixed(0)} / ${mbText(e.liveMb)}`,
      );
  }
  // The goals, as ratios of figures of this run.
  const compact = results.filter((r) => r.mode === 'compact');
  const peakOf = (r: RunFigures) => Math.max(...r.workers.map((w) => w.rssMb));
  const settledOf = (r: RunFigures) => Math.max(...r.workers.map((w) => w.settledRssMb));
  if (compact.length > 1) {
    const [first] = compact;
    for (const r of compact.slice(1)) {
      line(
        `worker RSS at ${r.rows} / at ${first.rows}, peak and settled (goal <= 1.10)`,
        `${(peakOf(r) / peakOf(first)).toFixed(2)}, ${(settledOf(r) / settledOf(first)).toFixed(2)}`,
      );
      line(
        `compact rows/s at ${r.rows} / at ${first.rows} (goal >= 0.90)`,
        (r.rowsPerSecond / first.rowsPerSecond).toFixed(2),
      );
    }
  }
  for (const r of results)
    line(
      `${r.mode} rows/s at ${r.rows} / ceiling (goal >= ${r.mode === 'compact' ? '1.5' : '0.5'})`,
      (r.rowsPerSecond / ceiling).toFixed(2),
    );
} finally {
  await env.stop();
}
