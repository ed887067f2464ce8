// Appends result lines to a JSONL file idempotently: a row already in the file is never written
// twice, and a partial last line left by a crash is cut off before appending. So a retried
// activity, a replayed workflow, a killed worker or a zombie attempt neither doubles nor loses a
// row. Appends hold a lock file that every worker process honours (proper-lockfile: atomic mkdir,
// stale after a dead holder stops refreshing it), and a file grown by another process is read
// only from where this process last knew it. A short or failed write is rolled back and reported.
import { PcdsError } from '../contract/pcds-error.js';
import { createReadStream } from 'node:fs';
import { open, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import lockfile from 'proper-lockfile';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../files/atomic-write.js';
import { makeOpenFilePrivate } from '../files/private-mode.js';
import { recordRowLines } from '../metrics/instruments.js';

/** Where a line is in its file, without its newline. */
export interface LineSpan {
  start: number;
  length: number;
}

interface FileIndex<T> {
  /** Device and inode: another file at the same path (replaced, rotated) is read afresh. */
  identity: string;
  /** Size of the file when the index was last true; a larger one means someone else appended. */
  size: number;
  /** What the file says of each row; a later line of the same row replaces an earlier one. */
  rows: Map<number, T>;
}

/**
 * What JSONL files keyed by row say, per path: kept between calls, extended by what other
 * processes appended (read only from where this process last knew the file), rebuilt when the
 * file was replaced or shrank. Callers read it under the path's lock (withPathLock).
 */
class RowIndexes<T> {
  private readonly byPath = new Map<string, FileIndex<T>>();

  constructor(
    /** What a parsed line (at `at` in the file) says of its row; undefined indexes nothing. */
    private readonly entryOf: (
      line: { row: number } & Record<string, unknown>,
      at: LineSpan,
    ) => T | undefined,
  ) {}

  /** The index of the file as it is now. */
  async current(path: string): Promise<FileIndex<T>> {
    const now = await statOf(path);
    if (!now) {
      const fresh: FileIndex<T> = { identity: '', size: 0, rows: new Map() };
      this.byPath.set(path, fresh);
      return fresh;
    }
    let index = this.byPath.get(path);
    if (!index || index.identity !== now.identity || now.size < index.size) {
      index = { identity: now.identity, size: 0, rows: new Map() };
    }
    if (now.size !== index.size) index.size = await this.scanFrom(path, index.size, index.rows);
    this.byPath.set(path, index);
    return index;
  }

  /**
   * Appends lines at the file's end, as appendWhole does, and indexes each as `entryOf` says.
   * Returns where each line went.
   */
  async append(
    path: string,
    index: FileIndex<T>,
    lines: readonly { row: number }[],
  ): Promise<LineSpan[]> {
    const texts = lines.map((l) => Buffer.from(JSON.stringify(l) + '\n'));
    const data = Buffer.concat(texts);
    await appendWhole(path, index.size, data);
    const spans: LineSpan[] = [];
    let at = index.size;
    lines.forEach((l, i) => {
      const span = { start: at, length: texts[i].length - 1 };
      spans.push(span);
      at += texts[i].length;
      const entry = this.entryOf(l, span);
      if (entry !== undefined) index.rows.set(l.row, entry);
    });
    index.size += data.length;
    if (!index.identity) index.identity = (await statOf(path))?.identity ?? '';
    return spans;
  }

  /** A fresh, empty file at `path`. */
  emptied(path: string, identity: string): void {
    this.byPath.set(path, { identity, size: 0, rows: new Map() });
  }

  clear(): void {
    this.byPath.clear();
  }

  /** Forgets one file (it was replaced). */
  forget(path: string): void {
    this.byPath.delete(path);
  }

  /**
   * Indexes the lines from `from` to the end of the file, and cuts a trailing partial line (a
   * writer that crashed mid-line: that row was not acknowledged and will come again). Lines that
   * do not parse or carry no row number are kept but index nothing.
   */
  private async scanFrom(path: string, from: number, rows: Map<number, T>): Promise<number> {
    let offset = from;
    let lastNewlineEnd = from;
    let carry = Buffer.alloc(0);
    for await (const chunk of createReadStream(path, { start: from }) as AsyncIterable<Buffer>) {
      let buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
      let nl: number;
      while ((nl = buf.indexOf(0x0a)) !== -1) {
        const line = lineOf(buf.subarray(0, nl).toString('utf8'));
        const span = { start: offset, length: nl };
        offset += nl + 1;
        lastNewlineEnd = offset;
        const entry = line && this.entryOf(line, span);
        if (line && entry !== undefined) rows.set(line.row, entry);
        buf = buf.subarray(nl + 1);
      }
      carry = Buffer.from(buf);
    }
    if (carry.length > 0) await truncate(path, lastNewlineEnd);
    return lastNewlineEnd;
  }
}

/** Rows of the output files that have their line, and where it is. */
const outputs = new RowIndexes<LineSpan>((_line, at) => at);
const locks = new Map<string, Promise<unknown>>();

/** Error codes of a disk or permission problem: retrying will not help until someone fixes it. */
const UNWRITABLE = new Set(['ENOSPC', 'EDQUOT', 'EFBIG', 'EACCES', 'EPERM', 'EROFS', 'EIO']);

/** The output cannot be written until an operator acts (disk full, quota, permissions). */
export class OutputUnwritableError extends PcdsError {
  override name = 'OutputUnwritableError';
  constructor(
    /** The system's error code, e.g. ENOSPC. */
    readonly errno: string,
    message: string,
  ) {
    super('output_unwritable', message);
  }
}

const REASONS: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large for the file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  EIO: 'input/output error',
};

/** An OutputUnwritableError for a system error with one of the codes above, else the error. */
export function classifyWriteError(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code && UNWRITABLE.has(code))
    return new OutputUnwritableError(code, `cannot write the output: ${code} (${REASONS[code]})`);
  return err;
}

/** Runs `fn` after every earlier call on the same path in this process, then under the file lock. */
function withPathLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const before = locks.get(path) ?? Promise.resolve();
  const locked = () => withFileLock(path, fn);
  const run = before.then(locked, locked);
  const settled = run.catch(() => undefined);
  locks.set(path, settled);
  void settled.then(() => {
    if (locks.get(path) === settled) locks.delete(path);
  });
  return run;
}

async function withFileLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  try {
    await makePrivateDir(dirname(path));
  } catch (err) {
    throw classifyWriteError(err);
  }
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(path, {
      realpath: false,
      lockfilePath: `${path}.lock`,
      // A holder that died stops refreshing its lock; after `stale` ms another process takes it.
      stale: 10_000,
      update: 2_000,
      retries: { retries: 60, minTimeout: 20, maxTimeout: 500, factor: 1.5 },
    });
  } catch (err) {
    throw classifyWriteError(err);
  }
  try {
    return await fn();
  } finally {
    // A lock already taken over as stale is not ours to release any more.
    await release().catch(() => undefined);
  }
}

async function statOf(path: string): Promise<{ size: number; identity: string } | undefined> {
  try {
    const st = await stat(path);
    return { size: st.size, identity: `${st.dev}:${st.ino}` };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function lineOf(text: string): ({ row: number } & Record<string, unknown>) | undefined {
  try {
    const v = JSON.parse(text) as Record<string, unknown> | null;
    return v && typeof v.row === 'number'
      ? (v as { row: number } & Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export interface AppendResult {
  written: number;
  skipped: number;
}

/**
 * Appends the lines whose row is not yet in the file, then fsyncs. A write that fails or comes
 * up short is cut back to where the file was, so no partial line stays, and is reported:
 * disk-full and permission errors as OutputUnwritableError, anything else as it is.
 */
export function appendResultLines(
  path: string,
  lines: readonly { row: number; duplicateOf?: number }[],
): Promise<AppendResult> {
  return withPathLock(path, async () => {
    const index = await outputs.current(path);
    const fresh = new Map<number, { row: number } & Record<string, unknown>>();
    for (const given of lines) {
      const line = given as { row: number; duplicateOf?: number } & Record<string, unknown>;
      if (index.rows.has(line.row) || fresh.has(line.row)) continue;
      fresh.set(
        line.row,
        line.duplicateOf === undefined ? line : await copiedLine(path, index, fresh, line),
      );
    }
    const written = [...fresh.values()];
    if (written.length > 0) await outputs.append(path, index, written);
    recordRowLines(written);
    return { written: fresh.size, skipped: lines.length - fresh.size };
  });
}

/**
 * A duplicate row's line: its leader's line (from this append or the file) with the row's own
 * number and key, marked with the leader's row. A leader line that cannot be found (the file was
 * edited) leaves the line as the batch gave it, with a message saying so.
 */
async function copiedLine(
  path: string,
  index: FileIndex<LineSpan>,
  fresh: ReadonlyMap<number, Record<string, unknown>>,
  line: { row: number; duplicateOf?: number } & Record<string, unknown>,
): Promise<{ row: number } & Record<string, unknown>> {
  const leaderRow = line.duplicateOf!;
  let leader = fresh.get(leaderRow);
  const span = leader ? undefined : index.rows.get(leaderRow);
  if (span) {
    const fh = await open(path, 'r');
    try {
      const buf = Buffer.alloc(span.length);
      await fh.read(buf, 0, span.length, span.start);
      leader = lineOf(buf.toString('utf8'));
    } finally {
      await fh.close();
    }
  }
  if (!leader)
    return {
      ...line,
      message: `the line of row ${leaderRow}, whose call this row shares, is not in the output`,
    };
  const { row: _row, key: _key, duplicateOf: _of, ...shared } = leader;
  return {
    row: line.row,
    key: line.key,
    ...shared,
    // A CSV shows this too (its message column): found and empty lines have no message of their own.
    message: shared.message ?? `shares the call of row ${leaderRow} (same parameters)`,
    duplicateOf: leaderRow,
  };
}

/** Writes all of `data` at `at` (the file's end) and fsyncs, or leaves the file as it was. */
async function appendWhole(path: string, at: number, data: Buffer): Promise<void> {
  let fh;
  try {
    // A new file is its owner's only, and one that exists is made so.
    fh = await open(path, 'a', PRIVATE_FILE_MODE);
    await makeOpenFilePrivate(fh);
  } catch (err) {
    await fh?.close().catch(() => undefined);
    throw classifyWriteError(err);
  }
  try {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await fh.write(data, done, data.length - done);
      // A regular file that takes nothing more is full: writing on would spin.
      if (bytesWritten === 0)
        throw Object.assign(new Error('no byte was written'), { code: 'ENOSPC' });
      done += bytesWritten;
    }
    await fh.sync();
  } catch (err) {
    await fh.truncate(at).catch(() => undefined);
    throw classifyWriteError(err);
  } finally {
    await fh.close();
  }
}

/** Starts an output afresh (a new export), creating its directory. */
export function resetOutput(path: string): Promise<void> {
  return withPathLock(path, async () => {
    try {
      const fh = await open(path, 'w', PRIVATE_FILE_MODE);
      try {
        await makeOpenFilePrivate(fh);
        await fh.sync();
      } finally {
        await fh.close();
      }
    } catch (err) {
      throw classifyWriteError(err);
    }
    outputs.emptied(path, (await statOf(path))?.identity ?? '');
  });
}

/** Forgets cached indexes (tests, and a worker that hands a file over). */
export function forgetOutputIndexes(): void {
  outputs.clear();
}
