// Exports of a finished batch from the embedded store (CSV, JSONL, Parquet) beside the baseline,
// the file export (batch-io/export.ts) of the same rows from a JSONL output and the input CSV.
// Prints (does not assert) wall time and peak RSS of each, at two sizes: memory that stays flat
// from the smaller to the larger is memory bounded in rows. Each export runs in a process of its
// own, so each peak is its own. Run: npx tsx bench/export.ts [rows,rows...]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { exportBatchOutput } from '../src/batch-io/export.js';
import type { ResultLine } from '../src/batch/types.js';
import { BatchStore, createSealer, openStore } from '../src/store/index.js';
import { exportBatchFromStore } from '../src/store/export.js';

const MODES = ['files-csv', 'store-csv', 'store-jsonl', 'store-parquet'] as const;
type Mode = (typeof MODES)[number];
const BATCH = 'bench';

/** The store's sealing key, shared with each child through its environment. */
function sealer(keyHex: string) {
  return createSealer(
    { currentKeyId: 'k1', keys: new Map([['k1', new Uint8Array(Buffer.from(keyHex, 'hex'))]]) },
    { key: Buffer.from(keyHex, 'hex') },
  );
}

/** A realistic result: a dozen fields, nested objects, an array, numbers and booleans. */
function resultOf(i: number) {
  return {
    full_name: `Person ${i}`,
    first_name: 'Person',
    last_name: String(i),
    title: i % 7 === 0 ? '=not a formula' : 'Engineer',
    seniority: i % 3,
    score: (i % 100) / 10,
    verified: i % 2 === 0,
    location: { city: 'Lyon', country: 'FR', geo: { lat: 45.76, lon: 4.83 } },
    company: { name: `Company ${i % 500}`, domain: `c${i % 500}.example.com`, size: 50 + (i % 9) },
    social_profiles: { linkedin: { url: `https://linkedin.example/in/p${i}` } },
    skills: ['a', 'b', String(i % 11)],
  };
}

function lineOf(row: number): ResultLine {
  const key = { email: `p${row}@example.org` };
  if (row % 10 === 0) return { row, key, outcome: 'empty', requestId: `req_${row}` };
  if (row % 25 === 1)
    return { row, key, outcome: 'failed', code: 'timeout', message: 'the job did not finish' };
  return { row, key, outcome: 'found', requestId: `req_${row}`, result: resultOf(row) };
}

async function writeLines(path: string, lines: Iterable<string>): Promise<void> {
  const out = createWriteStream(path);
  for (const l of lines) if (!out.write(l)) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
}

/** The same batch of `rows` rows as files (input CSV + JSONL output) and in a store. */
async function buildFixture(rows: number, keyHex: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `pcds-bench-export-${rows}-`));
  const cells = (row: number) => ({
    email: `p${row}@example.org`,
    name: `Person ${row}`,
    notes: row % 13 === 0 ? '+33 1 23 45 67 89' : 'note',
  });
  await writeLines(
    join(dir, 'in.csv'),
    (function* () {
      yield 'email,name,notes\n';
      for (let r = 1; r <= rows; r++) {
        const c = cells(r);
        yield `${c.email},${c.name},${c.notes}\n`;
      }
    })(),
  );
  // Completion order is not row order: the lines are written in two interleaved halves.
  const order = [
    ...Array.from({ length: rows }, (_, i) => i + 1).filter((r) => r % 2 === 0),
    ...Array.from({ length: rows }, (_, i) => i + 1).filter((r) => r % 2 === 1),
  ];
  await writeLines(
    join(dir, 'out.jsonl'),
    (function* () {
      for (const r of order) yield JSON.stringify(lineOf(r)) + '\n';
    })(),
  );
  const store = await openStore({
    url: `sqlite:${join(dir, 'store.sqlite')}`,
    dataDir: dir,
    sealer: sealer(keyHex),
  });
  try {
    const batches = new BatchStore(store);
    await batches.beginLoad(BATCH, 'person_enrichment', ['email', 'name', 'notes']);
    const CHUNK = 2000;
    for (let from = 1; from <= rows; from += CHUNK) {
      const chunk = Array.from({ length: Math.min(CHUNK, rows - from + 1) }, (_, i) => {
        const c = cells(from + i);
        return { row: from + i, params: { email: c.email }, key: { email: c.email }, cells: c };
      });
      await batches.addRows(BATCH, 'person_enrichment', chunk);
    }
    await batches.finishLoad(BATCH, { blankLines: 0, dedupe: true });
    for (let i = 0; i < order.length; i += CHUNK)
      await batches.writeResults(BATCH, order.slice(i, i + CHUNK).map(lineOf));
  } finally {
    await store.close();
  }
  return dir;
}

/** One export in this process; prints its figures as JSON. */
async function child(mode: Mode, dir: string, keyHex: string): Promise<void> {
  const started = performance.now();
  let written = 0;
  const target = join(dir, `out-${mode}.${mode.split('-')[1]}`);
  if (mode === 'files-csv') {
    const report = await exportBatchOutput({
      source: { path: join(dir, 'in.csv'), format: 'csv' },
      lines: join(dir, 'out.jsonl'),
      target,
      format: 'csv',
      noLine: 'missing',
    });
    written = report.written;
  } else {
    const store = await openStore({
      url: `sqlite:${join(dir, 'store.sqlite')}`,
      dataDir: dir,
      sealer: sealer(keyHex),
    });
    try {
      const report = await exportBatchFromStore(new BatchStore(store), {
        batchId: BATCH,
        format: mode === 'store-csv' ? 'csv' : mode === 'store-jsonl' ? 'jsonl' : 'parquet',
        target,
        noLine: 'missing',
      });
      written = report.written;
    } finally {
      await store.close();
    }
  }
  process.stdout.write(
    JSON.stringify({
      ms: performance.now() - started,
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      cpuMs: (process.resourceUsage().userCPUTime + process.resourceUsage().systemCPUTime) / 1000,
      written,
      bytes: statSync(target).size,
    }),
  );
}

interface Figures {
  ms: number;
  cpuMs: number;
  maxRssMb: number;
  written: number;
  bytes: number;
}

function runChild(mode: Mode, dir: string, keyHex: string): Promise<Figures> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      [...process.execArgv, process.argv[1], '--child', mode, dir],
      { env: { ...process.env, BENCH_STORE_KEY: keyHex }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as Figures)
        : reject(new Error(`${mode} exited ${code}`)),
    );
  });
}

if (process.argv[2] === '--child') {
  await child(process.argv[3] as Mode, process.argv[4], process.env.BENCH_STORE_KEY ?? '');
} else {
  const sizes = (process.argv[2] ?? '20000,100000').split(',').map(Number);
  const keyHex = process.env.BENCH_STORE_KEY ?? randomBytes(32).toString('hex');
  const table: string[][] = [
    ['rows', 'export', 'seconds', 'CPU seconds', 'peak RSS (MB)', 'rows written', 'MB'],
  ];
  for (const rows of sizes) {
    const t0 = performance.now();
    const dir = await buildFixture(rows, keyHex);
    process.stderr.write(
      `fixture of ${rows} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );
    for (const mode of MODES) {
      const f = await runChild(mode, dir, keyHex);
      table.push([
        String(rows),
        mode === 'files-csv' ? 'files-csv (baseline)' : mode,
        (f.ms / 1000).toFixed(2),
        (f.cpuMs / 1000).toFixed(2),
        f.maxRssMb.toFixed(0),
        String(f.written),
        (f.bytes / 2 ** 20).toFixed(1),
      ]);
    }
  }
  const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
  for (const r of table)
    process.stdout.write(r.map((c, i) => c.padEnd(widths[i])).join('  ') + '\n');
}
