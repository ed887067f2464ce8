// Loads a batch's rows into the store where the caller runs, before the batch starts: an input
// file read in one pass by the batch reader's own rules, or objects handed in by code. Rows go in
// chunks, so memory stays bounded whatever the input's size.
import { PcdsError } from '../contract/pcds-error.js';
import { stat } from 'node:fs/promises';
import { ColumnError } from '../batch/columns.js';
import { fileRows, InputError, objectRow } from '../batch-io/row-reader.js';
import { ValueNotes } from '../batch/field-counts.js';
import type { FieldCounts } from '../batch/plan.js';
import type { InputRow, InputSource } from '../batch/types.js';
import { getEndpoint } from '../contract/index.js';
import type { CacheUse } from '../calls/cache-policy.js';
import type { BatchRecord, BatchRows, LoadedRow } from './roles.js';

/** Rows handed to the store at a time. */
export const LOAD_CHUNK_ROWS = 1000;

/**
 * A JSONL's (or code rows') columns for the export: its keys in first-seen order, up to this
 * many, so a file whose every row has keys of its own cannot grow the set without bound.
 */
export const MAX_INPUT_COLUMNS = 1000;

/** An input the load cannot read. The message names the problem, never the file's content. */
export class LoadError extends PcdsError {
  override name = 'LoadError';
  constructor(
    override readonly code: 'invalid_input_file' | 'input_not_readable',
    message: string,
  ) {
    super(code, message);
  }
}

export interface LoadProgress {
  /** Rows loaded so far (valid and invalid; blank lines are not rows). */
  rows: number;
  /** Bytes of the file read so far. */
  bytes: number;
  /** The file's size when the load began. */
  totalBytes: number;
}

export interface LoadResult {
  record: BatchRecord;
  /** Rows loaded, numbered 1..rows. */
  rows: number;
  invalid: number;
  blankLines: number;
  /** Rows that share an earlier row's call (0 without dedupe). */
  duplicates: number;
  /** Valid rows with values trimmed, or left out as unreadable, by parameter (for the plan). */
  trimmed: FieldCounts;
  unreadable: FieldCounts;
}

interface LoadCommon {
  batchId: string;
  endpoint: string;
  /** The row limit (PCDS_MAX_ROW_BYTES or the batch's own); the reader's default when absent. */
  maxRowBytes?: number;
  /** Rows with the same parameters once normalised share the first one's call. */
  dedupe: boolean;
  /** Stops the load between rows; what was loaded is dropped. */
  signal?: AbortSignal;
  /** Rows per call to the store; LOAD_CHUNK_ROWS by default. */
  chunkRows?: number;
  /** How the batch uses the result cache (kept with its record); absent: not at all. */
  cache?: CacheUse;
}

export interface FileLoadOptions extends LoadCommon {
  source: InputSource;
  /** How messages name the file (its path by default). */
  name?: string;
  /** Called after each chunk and at the end. */
  onProgress?: (p: LoadProgress) => void;
}

export interface RowsLoadOptions extends LoadCommon {
  rows: Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>;
  /** Called after each chunk and at the end. */
  onProgress?: (p: { rows: number }) => void;
}

/** A file error as a LoadError with its stable code; other errors (the store's) pass as they are. */
export function loadFailure(err: unknown, name: string): unknown {
  if (err instanceof ColumnError || err instanceof InputError)
    return new LoadError('invalid_input_file', err.message);
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
    const what =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : 'is a directory';
    return new LoadError('input_not_readable', `${name}: ${what}`);
  }
  return err;
}

function loadedRow(row: InputRow, cells: unknown): LoadedRow {
  const withCells = cells !== undefined ? { cells } : {};
  if ('problem' in row)
    return {
      row: row.row,
      problem: row.problem,
      ...(row.code ? { code: row.code } : {}),
      key: row.key,
      ...withCells,
    };
  return { row: row.row, params: row.params, key: row.key, ...withCells };
}

/** Keys in first-seen order, up to MAX_INPUT_COLUMNS. */
class KeysSeen {
  private readonly seen = new Set<string>();
  note(cells: unknown): void {
    if (typeof cells !== 'object' || cells === null || Array.isArray(cells)) return;
    for (const k of Object.keys(cells)) {
      if (this.seen.size >= MAX_INPUT_COLUMNS) return;
      this.seen.add(k);
    }
  }
  get columns(): string[] {
    return [...this.seen];
  }
}

/** Rows gathered and handed to the store a chunk at a time. */
class Chunker {
  private chunk: LoadedRow[] = [];
  rows = 0;
  invalid = 0;
  readonly notes: ValueNotes;
  constructor(
    private readonly store: BatchRows,
    private readonly batchId: string,
    private readonly endpoint: string,
    private readonly size: number,
  ) {
    this.notes = new ValueNotes(endpoint);
  }
  /** True when the row filled a chunk, which went to the store. */
  async add(input: InputRow, cells: unknown): Promise<boolean> {
    this.notes.note(input);
    const row = loadedRow(input, cells);
    this.chunk.push(row);
    this.rows += 1;
    if ('problem' in row) this.invalid += 1;
    if (this.chunk.length < this.size) return false;
    await this.flush();
    return true;
  }
  async flush(): Promise<void> {
    const rows = this.chunk;
    this.chunk = [];
    await this.store.addRows(this.batchId, this.endpoint, rows);
  }
}

async function finish(
  store: BatchRows,
  opts: LoadCommon,
  blankLines: number,
  notes: ValueNotes,
  columns?: string[],
): Promise<LoadResult> {
  if (columns) await store.setColumns(opts.batchId, columns);
  const record = await store.finishLoad(opts.batchId, { blankLines, dedupe: opts.dedupe });
  return {
    record,
    rows: record.total,
    invalid: record.invalid,
    blankLines: record.blankLines,
    duplicates: opts.dedupe ? await store.duplicateCount(opts.batchId) : 0,
    trimmed: notes.trimmed.counts,
    unreadable: notes.unreadable.counts,
  };
}

/**
 * Streams an input file into the store as a new batch's rows: the CSV header (or a JSONL's first
 * object) is checked before the batch is created, then every row is read once, numbered,
 * validated and stored with its cells; a load that fails or is stopped is dropped. Throws
 * LoadError for a file that cannot be read or is not a valid input, BatchStoreError
 * (batch_exists) for an id whose rows are loaded already.
 */
export async function loadFileIntoStore(
  store: BatchRows,
  opts: FileLoadOptions,
): Promise<LoadResult> {
  const { batchId, endpoint, source } = opts;
  const name = opts.name ?? source.path;
  let header: string[] | undefined;
  let totalBytes: number;
  try {
    totalBytes = (await stat(source.path)).size;
  } catch (err) {
    throw loadFailure(err, name);
  }
  const items = fileRows(source, endpoint, {
    ...(opts.maxRowBytes !== undefined ? { maxRowBytes: opts.maxRowBytes } : {}),
    name,
    onHeader: (h) => (header = h),
  });
  const chunks = new Chunker(store, batchId, endpoint, opts.chunkRows ?? LOAD_CHUNK_ROWS);
  const keys = source.format === 'jsonl' ? new KeysSeen() : undefined;
  let began = false;
  let blankLines = 0;
  let bytes = 0;
  const progress = () => opts.onProgress?.({ rows: chunks.rows, bytes, totalBytes });
  try {
    // The first step reads (and checks) a CSV's header: a bad file creates no batch.
    let step = await items.next();
    opts.signal?.throwIfAborted();
    await store.beginLoad(batchId, endpoint, header, opts.cache);
    began = true;
    for (; !step.done; step = await items.next()) {
      opts.signal?.throwIfAborted();
      const item = step.value;
      bytes = item.end;
      if (item.kind === 'blank') {
        blankLines += 1;
        continue;
      }
      keys?.note(item.cells);
      if (await chunks.add(item.row, item.cells)) progress();
    }
    await chunks.flush();
    bytes = Math.max(bytes, totalBytes);
    progress();
    return await finish(store, opts, blankLines, chunks.notes, keys?.columns);
  } catch (err) {
    if (began) await store.abandonLoad(batchId).catch(() => undefined);
    throw loadFailure(err, name);
  } finally {
    await items.return(undefined);
  }
}

/**
 * Loads rows handed in by code (a service's objects) as a new batch's rows, each judged as a
 * JSONL line's object is (objectRow); the objects' keys become the batch's columns. Throws
 * BatchStoreError (batch_exists) for an id whose rows are loaded already.
 */
export async function loadRowsIntoStore(
  store: BatchRows,
  opts: RowsLoadOptions,
): Promise<LoadResult> {
  const { batchId, endpoint } = opts;
  getEndpoint(endpoint);
  opts.signal?.throwIfAborted();
  await store.beginLoad(batchId, endpoint, undefined, opts.cache);
  const chunks = new Chunker(store, batchId, endpoint, opts.chunkRows ?? LOAD_CHUNK_ROWS);
  const keys = new KeysSeen();
  try {
    for await (const obj of opts.rows) {
      opts.signal?.throwIfAborted();
      const got = objectRow(endpoint, obj, chunks.rows + 1, opts.maxRowBytes);
      keys.note(got.cells);
      if (await chunks.add(got.row, got.cells)) opts.onProgress?.({ rows: chunks.rows });
    }
    await chunks.flush();
    opts.onProgress?.({ rows: chunks.rows });
    return await finish(store, opts, 0, chunks.notes, keys.columns);
  } catch (err) {
    await store.abandonLoad(batchId).catch(() => undefined);
    throw err;
  }
}
