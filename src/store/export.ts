// Ordered copies of a batch's output written from the store where the CLI or client runs: a CSV
// (the same layout and cells as batch-io/export.ts gives from the files), a JSONL, or a typed
// Parquet file; and the results paged or iterated. Memory stays bounded: rows are read a page
// at a time (rows LEFT JOIN results, in row order) after one pass that learns the result columns.
import { createWriteStream } from 'node:fs';
import { chmod, mkdtemp, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DuckDBAppender, DuckDBInstance } from '@duckdb/node-api';
import { stringify } from 'csv-stringify';
import {
  cellText,
  csvLayout,
  csvRow,
  flattenValues,
  OUTCOME_COLUMNS,
  ResultColumns,
  type NoLineLabel,
} from '../batch/flatten.js';
import { spreadsheetSafeCsv } from '../batch/spreadsheet-safe.js';
import type { ExportReport, ResultLine } from '../batch/types.js';
import { PRIVATE_FILE_MODE, writeAtomically } from '../files/atomic-write.js';
import { BatchStoreError } from './batch-store.js';
import type { BatchRecords, ResultReader } from './roles.js';

export type StoreExportFormat = 'csv' | 'jsonl' | 'parquet';

export interface StoreExportRequest {
  batchId: string;
  format: StoreExportFormat;
  /** The file written (replaced whole, 0600). */
  target: string;
  /** The outcome cell of an input row with no result: `pending` while the batch runs. */
  noLine: NoLineLabel;
  /**
   * CSV cells exactly as they are, for programs that read the file: by default a cell starting
   * like a formula is neutralised (batch/spreadsheet-safe.ts), so a spreadsheet never runs it. Parquet and
   * JSONL hold values, not cells a spreadsheet runs: they are always as they are.
   */
  rawCells?: boolean;
  signal?: AbortSignal;
  /** Rows read from the store at a time (default 1000). */
  pageSize?: number;
}

/** Rows listed by number in a report (as batch-io/export.ts). */
const FIRST_SHOWN = 10;
const DEFAULT_PAGE = 1000;
/**
 * DuckDB's memory while it builds a Parquet file (its table's blocks past the limit go to spill
 * files). Half of it failed to flush the appender in the export bench.
 */
const PARQUET_MEMORY_LIMIT = '64MB';
/** Rows the appender holds before it hands them to DuckDB. */
const APPENDER_FLUSH_ROWS = 2_048;
/** Rows per Parquet row group: the writer holds one group at a time. */
const PARQUET_ROW_GROUP = 16_384;

/** A result column's type in a typed export: one JSON type throughout, or text. */
export type ValueKind = 'integer' | 'double' | 'boolean' | 'text';

/** A result value's kind; null and absent values say nothing about a column's type. */
function kindOf(value: unknown): ValueKind | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return Number.isSafeInteger(value) ? 'integer' : 'double';
  return 'text';
}

function joinedKind(a: ValueKind | undefined, b: ValueKind | undefined): ValueKind | undefined {
  if (a === undefined || a === b) return b ?? a;
  if (b === undefined) return a;
  const numbers = new Set<ValueKind>(['integer', 'double']);
  return numbers.has(a) && numbers.has(b) ? 'double' : 'text';
}

/**
 * The result columns of a batch (in the order batch-io/export.ts gives them) and, for a typed
 * export, each column's kind: integer or double where every value is a number, boolean where
 * every value is one, text otherwise (a column with only nulls is text).
 */
export class ResultShape {
  readonly columns = new ResultColumns();
  private readonly kinds = new Map<string, ValueKind | undefined>();

  note(row: number, result: unknown): void {
    const flat = flattenValues(result);
    this.columns.note(
      row,
      flat.map(([name]) => name),
    );
    for (const [name, value] of flat) {
      const kind = kindOf(value);
      this.kinds.set(name, this.kinds.has(name) ? joinedKind(this.kinds.get(name), kind) : kind);
    }
  }

  kind(name: string): ValueKind {
    return this.kinds.get(name) ?? 'text';
  }
}

/**
 * Pages in row order, each page's query made while the one before is handled (opened, written):
 * the store's time overlaps ours. A read ahead that fails is reported when its page is reached.
 */
async function* pagesAhead<T extends { row: number }>(
  read: (after: number) => Promise<T[]>,
  pageSize: number,
  signal?: AbortSignal,
): AsyncGenerator<T[]> {
  signal?.throwIfAborted();
  let next: Promise<T[]> | undefined = read(0);
  while (next) {
    const page: T[] = await next;
    signal?.throwIfAborted();
    next = page.length < pageSize ? undefined : read(page[page.length - 1].row);
    // Handled here too, so one left unread (the walk stopped early) is not an unhandled rejection.
    next?.catch(() => undefined);
    yield page;
  }
}

async function resultShapeOf(
  store: ResultReader,
  batchId: string,
  pageSize: number,
  signal?: AbortSignal,
): Promise<ResultShape> {
  const shape = new ResultShape();
  const pages = pagesAhead(
    (after) => store.resultValues(batchId, after, pageSize),
    pageSize,
    signal,
  );
  for await (const page of pages) for (const r of page) shape.note(r.row, r.result);
  return shape;
}

/** A row's input cells under the batch's columns: a CSV's record or a JSONL's object. */
function inputValues(columns: readonly string[], cells: unknown): unknown[] {
  if (Array.isArray(cells)) return columns.map((_, i) => cells[i] as unknown);
  if (typeof cells === 'object' && cells !== null) {
    const obj = cells as Record<string, unknown>;
    return columns.map((c) => (Object.hasOwn(obj, c) ? obj[c] : undefined));
  }
  return columns.map(() => undefined);
}

interface StoredRow {
  row: number;
  cells?: unknown;
  line?: ResultLine;
}

/** Counts what a walk over the rows found, for the report. */
class Tally {
  inputRows = 0;
  written = 0;
  withoutLine = 0;
  readonly firstWithoutLine: number[] = [];

  saw(r: StoredRow): void {
    this.inputRows += 1;
    if (r.line) return;
    this.withoutLine += 1;
    if (this.firstWithoutLine.length < FIRST_SHOWN) this.firstWithoutLine.push(r.row);
  }
}

/** Every input row in row order, with its result when it has one, a page at a time. */
async function* storedRows(
  store: ResultReader,
  batchId: string,
  pageSize: number,
  tally: Tally,
  signal?: AbortSignal,
): AsyncGenerator<StoredRow> {
  const read = (after: number) => store.rowsWithResults(batchId, after, pageSize);
  for await (const page of pagesAhead(read, pageSize, signal)) {
    for (const r of page) {
      tally.saw(r);
      yield r;
    }
  }
}

/**
 * Writes an ordered copy of a batch's output from the store: one row (CSV, Parquet) per input
 * row in row order, a row with no result yet labelled `noLine`; a JSONL has a line per result
 * in row order. Refused (BatchStoreError) when the batch is unknown or its rows still loading.
 */
export async function exportBatchFromStore(
  store: BatchRecords & ResultReader,
  req: StoreExportRequest,
): Promise<ExportReport> {
  const record = await store.loadedRecord(req.batchId);
  const inputColumns = record.columns ?? [];
  const pageSize = Math.max(1, req.pageSize ?? DEFAULT_PAGE);
  const tally = new Tally();
  const rows = () => storedRows(store, req.batchId, pageSize, tally, req.signal);
  const signal = req.signal ? { signal: req.signal } : {};

  if (req.format === 'jsonl') {
    await writeAtomically(req.target, async (tmp) => {
      async function* lines(): AsyncGenerator<string> {
        for await (const { line } of rows()) {
          if (!line) continue;
          tally.written += 1;
          yield JSON.stringify(line) + '\n';
        }
      }
      await pipeline(Readable.from(lines()), createWriteStream(tmp), signal);
    });
  } else {
    const shape = await resultShapeOf(store, req.batchId, pageSize, req.signal);
    const layout = csvLayout(inputColumns, shape.columns.ordered());
    if (req.format === 'csv') {
      await writeAtomically(req.target, async (tmp) => {
        async function* csvRows(): AsyncGenerator<string[]> {
          yield layout.header;
          for await (const r of rows()) {
            const cells = inputValues(inputColumns, r.cells).map(cellText);
            tally.written += 1;
            yield csvRow(layout, cells, r.line, req.noLine);
          }
        }
        // Every cell is a string by then (flatten.ts), header included: the options cover them all.
        const options = req.rawCells ? {} : spreadsheetSafeCsv();
        await pipeline(
          Readable.from(csvRows()),
          stringify(options),
          createWriteStream(tmp),
          signal,
        );
      });
    } else {
      await writeParquet(req, parquetLayout(layout, shape), rows(), tally);
    }
  }
  return {
    path: req.target,
    format: req.format,
    sorted: true,
    inputRows: tally.inputRows,
    written: tally.written,
    withoutLine: tally.withoutLine,
    firstWithoutLine: tally.firstWithoutLine,
    strayLines: await store.strayResults(req.batchId),
  };
}

// Parquet: a typed table built in an embedded DuckDB (appended a page at a time, spilled to a
// private folder past its memory limit), then copied to a Parquet file and renamed into place.

type SqlType = 'VARCHAR' | 'INTEGER' | 'BIGINT' | 'DOUBLE' | 'BOOLEAN';

interface ParquetColumn {
  /** The column's name in the file. */
  label: string;
  type: SqlType;
}

export interface ParquetLayout {
  inputColumns: readonly string[];
  resultColumns: readonly string[];
  /** Input columns, row, outcome, code, message, request_id, duplicate_of, result columns. */
  columns: ParquetColumn[];
}

/** The columns every Parquet export has between the input's columns and the result's. */
export const PARQUET_ROW_COLUMNS: readonly ParquetColumn[] = [
  { label: 'row', type: 'INTEGER' },
  ...OUTCOME_COLUMNS.map((label) => ({ label, type: 'VARCHAR' as const })),
  { label: 'request_id', type: 'VARCHAR' },
  { label: 'duplicate_of', type: 'INTEGER' },
];

const SQL_TYPE: Record<ValueKind, SqlType> = {
  integer: 'BIGINT',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  text: 'VARCHAR',
};

/**
 * The Parquet file's columns. Names are unique without regard to case (as DuckDB and most
 * readers want): the row columns keep theirs, an input column that takes one already is headed
 * `input.<name>`, and result columns are headed as in the CSV, `result.<name>` where taken.
 */
export function parquetLayout(
  layout: ReturnType<typeof csvLayout>,
  shape: ResultShape,
): ParquetLayout {
  const taken = new Set(PARQUET_ROW_COLUMNS.map((c) => c.label.toLowerCase()));
  const unique = (name: string, prefix: string) => {
    let label = name === '' ? `${prefix}column` : name;
    while (taken.has(label.toLowerCase())) label = `${prefix}${label}`;
    taken.add(label.toLowerCase());
    return label;
  };
  const input = layout.inputColumns.map((name) => ({
    label: unique(name, 'input.'),
    type: 'VARCHAR' as const,
  }));
  const csvLabels = layout.header.slice(layout.inputColumns.length + OUTCOME_COLUMNS.length);
  const result = layout.resultColumns.map((name, i) => ({
    label: unique(csvLabels[i], 'result.'),
    type: SQL_TYPE[shape.kind(name)],
  }));
  return {
    inputColumns: layout.inputColumns,
    resultColumns: layout.resultColumns,
    columns: [...input, ...PARQUET_ROW_COLUMNS, ...result],
  };
}

const quotedName = (name: string) => `"${name.replace(/"/g, '""')}"`;
const quotedText = (text: string) => `'${text.replace(/'/g, "''")}'`;

function appendValue(appender: DuckDBAppender, type: SqlType, value: unknown): void {
  if (value === null || value === undefined) return appender.appendNull();
  switch (type) {
    case 'INTEGER':
      return appender.appendInteger(value as number);
    case 'BIGINT':
      return appender.appendBigInt(BigInt(value as number));
    case 'DOUBLE':
      return appender.appendDouble(value as number);
    case 'BOOLEAN':
      return appender.appendBoolean(value as boolean);
    default:
      return appender.appendVarchar(cellText(value));
  }
}

/** One Parquet row's values, in the order of the layout's columns. */
function parquetValues(layout: ParquetLayout, r: StoredRow, noLine: NoLineLabel): unknown[] {
  const line = r.line;
  const flat = new Map(line ? flattenValues(line.result) : []);
  return [
    ...inputValues(layout.inputColumns, r.cells),
    r.row,
    line ? line.outcome : noLine,
    line?.code,
    line?.message,
    line?.requestId,
    line?.duplicateOf,
    ...layout.resultColumns.map((name) => flat.get(name)),
  ];
}

async function writeParquet(
  req: StoreExportRequest,
  layout: ParquetLayout,
  rows: AsyncIterable<StoredRow>,
  tally: Tally,
): Promise<void> {
  await writeAtomically(req.target, async (tmp) => {
    // DuckDB's spill files and output hold row data in clear: a folder of the owner's only
    // (mkdtemp makes it 0700), beside the target, removed whatever happens.
    const work = await mkdtemp(join(dirname(tmp), '.pcds-parquet-'));
    let instance: DuckDBInstance | undefined;
    try {
      // Loaded here: every other user of the store goes without the native engine.
      const { DuckDBInstance } = await import('@duckdb/node-api');
      // An in-memory database whose blocks spill to the private folder past the limit. A database
      // file stayed bounded too, but compressed every full row group as the appender flushed, on
      // this thread: a million rows took 73 s to Parquet that way and 54 s in memory (bounded
      // alike, about 390 MB of RSS at 1,000,000 rows and 370 MB at 100,000).
      instance = await DuckDBInstance.create(':memory:', {
        memory_limit: PARQUET_MEMORY_LIMIT,
        temp_directory: join(work, 'spill'),
        // One thread: each would hold buffers of its own, and the store's reads are the slow part.
        threads: '1',
      });
      const connection = await instance.connect();
      try {
        const names = layout.columns.map((_, i) => `c${i}`);
        await connection.run(
          `CREATE TABLE export (${layout.columns.map((c, i) => `${names[i]} ${c.type}`).join(', ')})`,
        );
        const appender = await connection.createAppender('export');
        try {
          let pending = 0;
          for await (const r of rows) {
            const values = parquetValues(layout, r, req.noLine);
            layout.columns.forEach((c, i) => appendValue(appender, c.type, values[i]));
            appender.endRow();
            tally.written += 1;
            if (++pending >= APPENDER_FLUSH_ROWS) {
              appender.flushSync();
              pending = 0;
            }
          }
          appender.flushSync();
        } finally {
          appender.closeSync();
        }
        req.signal?.throwIfAborted();
        const file = join(work, 'export.parquet');
        const select = layout.columns
          .map((c, i) => `${names[i]} AS ${quotedName(c.label)}`)
          .join(', ');
        await connection.run(
          `COPY (SELECT ${select} FROM export) TO ${quotedText(file)} (FORMAT parquet, ROW_GROUP_SIZE ${PARQUET_ROW_GROUP})`,
        );
        await chmod(file, PRIVATE_FILE_MODE);
        await rename(file, tmp);
      } finally {
        connection.closeSync();
      }
    } finally {
      instance?.closeSync();
      await rm(work, { recursive: true, force: true });
    }
  });
}

// Results paged or iterated, for the typed client.

/** Where a listing resumes: the last row (input order) or [written at, row] (completion order). */
export type ResultCursor = number | [number, number];

export interface BatchResultsQuery {
  /** Row order (default) or the order the results were written in. */
  order?: 'input' | 'completion';
  outcome?: ResultLine['outcome'];
  /** The cursor of the last page already seen. */
  after?: ResultCursor;
  /** At most this many results in all. */
  limit?: number;
  /** Results read from the store at a time (default 1000, at most 10,000). */
  pageSize?: number;
}

/** A result line as the store keeps it; `R` is its endpoint's result (client.ts types it). */
export type StoredResult<R = unknown> = Omit<ResultLine, 'result'> & { result?: R; keyId?: string };

export interface ResultPage {
  lines: StoredResult[];
  /** The cursor to resume after this page; absent when there was nothing more. */
  next?: ResultCursor;
}

/** A batch's results a page at a time, each page with the cursor that resumes after it. */
export async function* batchResultPages(
  store: BatchRecords & ResultReader,
  batchId: string,
  query: BatchResultsQuery = {},
): AsyncGenerator<ResultPage> {
  if (!(await store.record(batchId)))
    throw new BatchStoreError('no_such_batch', `the store has no rows for batch ${batchId}`);
  const pageSize = Math.max(1, Math.min(query.pageSize ?? DEFAULT_PAGE, 10_000));
  let left = query.limit ?? Infinity;
  let after = query.after;
  while (left > 0) {
    const page = await store.results(batchId, {
      order: query.order ?? 'input',
      ...(query.outcome ? { outcome: query.outcome } : {}),
      ...(after !== undefined ? { after } : {}),
      limit: Math.min(pageSize, left),
    });
    left -= page.lines.length;
    if (page.lines.length > 0) yield page;
    if (page.next === undefined) return;
    after = page.next;
  }
}

/** A batch's results one at a time (read a page at a time), up to `limit`. */
export async function* batchResults(
  store: BatchRecords & ResultReader,
  batchId: string,
  query: BatchResultsQuery = {},
): AsyncGenerator<StoredResult> {
  for await (const page of batchResultPages(store, batchId, query)) yield* page.lines;
}
