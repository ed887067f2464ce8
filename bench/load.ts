// Loading a generated CSV into the embedded store (sealed, deduplicated) beside the baseline of
// the same file read with the batch reader's readRows loop and no store: rows/s and peak RSS,
// each measured in a process of its own so one's memory does not show in the other's peak.
// Run: npx tsx bench/load.ts [rows...]   (default: 100000 1000000)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { inspectInput, readRows } from '../src/batch-io/row-reader.js';
import type { InputSource } from '../src/batch/types.js';
import { BatchStore, createSealer, loadFileIntoStore, openStore } from '../src/store/index.js';

const ENDPOINT = 'person_enrichment';

interface Figures {
  rows: number;
  seconds: number;
  peakRssMb: number;
}

async function measureReader(path: string): Promise<Figures> {
  const source: InputSource = { path, format: 'csv' };
  const started = performance.now();
  const info = await inspectInput(source, ENDPOINT);
  let cursor = { row: 1, byteOffset: info.dataOffset, done: false };
  let rows = 0;
  while (!cursor.done) {
    const got = await readRows({
      source,
      endpoint: ENDPOINT,
      header: info.header,
      from: cursor,
      count: 1000,
    });
    rows += got.rows.length;
    cursor = got.next;
  }
  return { rows, seconds: (performance.now() - started) / 1000, peakRssMb: peakRssMb() };
}

async function measureStore(path: string): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-load-store-'));
  const store = await openStore({
    url: `sqlite:${join(dir, 'store.sqlite')}`,
    dataDir: dir,
    sealer: createSealer(
      { currentKeyId: 'k1', keys: new Map([['k1', new Uint8Array(randomBytes(32))]]) },
      { key: randomBytes(32) },
    ),
  });
  try {
    const started = performance.now();
    const loaded = await loadFileIntoStore(new BatchStore(store), {
      batchId: 'bench',
      endpoint: ENDPOINT,
      source: { path, format: 'csv' },
      dedupe: true,
    });
    return {
      rows: loaded.rows,
      seconds: (performance.now() - started) / 1000,
      peakRssMb: peakRssMb(),
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const peakRssMb = () => process.resourceUsage().maxRSS / 1024;

async function writeCsv(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  out.write('email,name,company\n');
  for (let i = 0; i < rows; i++) {
    // One row in ten repeats an earlier one: dedupe has work to do.
    const n = i % 10 === 9 ? i - 5 : i;
    const line = `person.${n}@example.org,Person Number ${n},Company ${n % 977} Incorporated\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** Runs one measurement in a fresh process and reads its figures. */
async function inChild(what: 'reader' | 'store', path: string): Promise<Figures> {
  const child = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), '--one', what, path],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`the ${what} measurement exited with ${code}`);
  return JSON.parse(out) as Figures;
}

const line = (label: string, f: Figures) =>
  `  ${label.padEnd(28)} ${String(Math.round(f.rows / f.seconds)).padStart(8)} rows/s ` +
  `${f.seconds.toFixed(1).padStart(7)} s  peak RSS ${f.peakRssMb.toFixed(0).padStart(5)} MB\n`;

if (process.argv[2] === '--one') {
  const [what, path] = process.argv.slice(3);
  const figures = what === 'store' ? await measureStore(path) : await measureReader(path);
  process.stdout.write(JSON.stringify(figures));
} else {
  const sizes = process.argv.slice(2).map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-load-'));
  try {
    for (const rows of sizes.length ? sizes : [100_000, 1_000_000]) {
      const path = join(dir, `rows-${rows}.csv`);
      await writeCsv(path, rows);
      const mb = statSync(path).size / 1024 / 1024;
      process.stdout.write(`${rows} rows, ${mb.toFixed(1)} MB of CSV:\n`);
      const reader = await inChild('reader', path);
      const store = await inChild('store', path);
      process.stdout.write(line('baseline: readRows loop', reader));
      process.stdout.write(line('load into embedded store', store));
      rmSync(path);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
