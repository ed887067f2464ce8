// Appends result lines to a JSONL file idempotently: a row already in the file is never written
// twice, and a partial last line left by a crash is cut off before appending. So a retried
// activity, a replayed workflow or a killed worker neither doubles nor loses a row.
import { createReadStream } from 'node:fs';
import { mkdir, open, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';

interface FileIndex {
  /** Size of the file when the index was last true; another size means someone else wrote. */
  size: number;
  rows: Set<number>;
}

const indexes = new Map<string, FileIndex>();
const locks = new Map<string, Promise<unknown>>();

/** Runs `fn` after every earlier call on the same path, so appends to a file never interleave. */
function serialized<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const before = locks.get(path) ?? Promise.resolve();
  const run = before.then(fn, fn);
  const settled = run.catch(() => undefined);
  locks.set(path, settled);
  void settled.then(() => {
    if (locks.get(path) === settled) locks.delete(path);
  });
  return run;
}

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Reads the rows already in the file and cuts a trailing partial line. Lines that do not parse
 * or carry no row number are kept as they are (they are not ours to judge) but index nothing.
 */
async function scan(path: string): Promise<FileIndex> {
  const rows = new Set<number>();
  let size = await sizeOf(path);
  if (size === undefined || size === 0) return { size: 0, rows };
  let offset = 0;
  let lastNewlineEnd = 0;
  let carry = Buffer.alloc(0);
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    let buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let nl: number;
    while ((nl = buf.indexOf(0x0a)) !== -1) {
      const line = buf.subarray(0, nl).toString('utf8');
      offset += nl + 1;
      lastNewlineEnd = offset;
      const row = rowOf(line);
      if (row !== undefined) rows.add(row);
      buf = buf.subarray(nl + 1);
    }
    carry = Buffer.from(buf);
  }
  if (lastNewlineEnd < size) {
    // A write cut short by a crash: the row it held was not acknowledged, so it will come again.
    await truncate(path, lastNewlineEnd);
    size = lastNewlineEnd;
  }
  return { size, rows };
}

function rowOf(line: string): number | undefined {
  try {
    const v = JSON.parse(line) as { row?: unknown };
    return typeof v.row === 'number' ? v.row : undefined;
  } catch {
    return undefined;
  }
}

export interface AppendResult {
  written: number;
  skipped: number;
}

/** Appends the lines whose row is not yet in the file, then fsyncs. */
export function appendResultLines(
  path: string,
  lines: readonly { row: number }[],
): Promise<AppendResult> {
  return serialized(path, async () => {
    let index = indexes.get(path);
    const size = (await sizeOf(path)) ?? 0;
    if (!index || index.size !== size) {
      index = await scan(path);
      indexes.set(path, index);
    }
    const fresh: { row: number }[] = [];
    const batchRows = new Set<number>();
    for (const line of lines) {
      if (index.rows.has(line.row) || batchRows.has(line.row)) continue;
      batchRows.add(line.row);
      fresh.push(line);
    }
    if (fresh.length > 0) {
      await mkdir(dirname(path), { recursive: true });
      const text = fresh.map((l) => JSON.stringify(l) + '\n').join('');
      const fh = await open(path, 'a');
      try {
        await fh.write(text);
        await fh.sync();
      } finally {
        await fh.close();
      }
      for (const l of fresh) index.rows.add(l.row);
      index.size += Buffer.byteLength(text);
    }
    return { written: fresh.length, skipped: lines.length - fresh.length };
  });
}

/** Starts an output afresh (a new batch), creating its directory. */
export function resetOutput(path: string): Promise<void> {
  return serialized(path, async () => {
    await mkdir(dirname(path), { recursive: true });
    const fh = await open(path, 'w');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    indexes.set(path, { size: 0, rows: new Set() });
  });
}

/** Forgets cached indexes (tests, and a worker that hands a file over). */
export function forgetOutputIndexes(): void {
  indexes.clear();
}
