// Ordered copies of a batch's output: a CSV (the input's columns, the outcome, the result
// flattened) or a JSONL, one row per input row in row order, at any time. One pass over the
// results notes where each row's line starts (12 bytes a row, line-offsets.ts) and which result
// columns exist; a second pass walks the input in order and reads each row's line back.
import { createReadStream, createWriteStream } from 'node:fs';
import { access, open, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import {
  csvLayout,
  csvRow,
  flattenResult,
  objectCells,
  ResultColumns,
  type NoLineLabel,
} from '../batch/flatten.js';
import { spreadsheetSafeCsv } from '../batch/spreadsheet-safe.js';
import { writeAtomically } from '../files/atomic-write.js';
import { csvItems, type CsvItem } from './csv-records.js';
import { LineOffsets } from './line-offsets.js';
import { jsonlItems, parseObject, rowLimitOf } from './row-reader.js';
import type { ExportReport, InputFiles, ResultLine } from '../batch/types.js';

export type ExportFormat = 'csv' | 'jsonl';

export interface ExportRequest {
  /** The batch's input: its rows give the order and (for a CSV) the first columns. */
  source: InputFiles;
  /** The batch's streamed JSONL output. */
  lines: string;
  target: string;
  format: ExportFormat;
  /** JSONL in row order; without it, a copy in file order. A CSV is always in row order. */
  sorted?: boolean;
  /** The outcome cell of a row with no line: `pending` while the batch runs. */
  noLine: NoLineLabel;
  /**
   * CSV cells exactly as they are, for programs that read the file: by default a cell starting
   * like a formula is neutralised (batch/spreadsheet-safe.ts), so a spreadsheet never runs it.
   */
  rawCells?: boolean;
  signal?: AbortSignal;
}

/** Rows listed by number in a report. */
const FIRST_SHOWN = 10;

interface LineIndex {
  /** Row -> [byte offset, byte length] of its first line, newline left out. */
  rows: LineOffsets;
  /** Complete lines (every line up to the last newline). */
  lines: number;
  /** Bytes of the complete lines: a line being written past them is not read. */
  end: number;
}

function rowOf(line: unknown): number | undefined {
  const row = (line as { row?: unknown } | null)?.row;
  return typeof row === 'number' && Number.isSafeInteger(row) && row >= 1 ? row : undefined;
}

/** The first pass: where each row's line is, and (for a CSV) the result columns. */
async function indexLines(path: string, columns?: ResultColumns): Promise<LineIndex> {
  const index: LineIndex = { rows: new LineOffsets(), lines: 0, end: 0 };
  let stream: AsyncIterable<Buffer>;
  try {
    const fh = await open(path, 'r');
    stream = fh.createReadStream() as AsyncIterable<Buffer>;
  } catch (err) {
    // A batch that has not written anything yet: every row is without a line.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return index;
    throw err;
  }
  let offset = 0;
  let carry = Buffer.alloc(0);
  for await (const chunk of stream) {
    let buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let nl: number;
    while ((nl = buf.indexOf(0x0a)) !== -1) {
      const text = buf.subarray(0, nl).toString('utf8');
      index.lines += 1;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const row = rowOf(parsed);
      if (row !== undefined && !index.rows.has(row)) {
        index.rows.setFirst(row, offset, nl);
        columns?.note(
          row,
          flattenResult((parsed as ResultLine).result).map(([name]) => name),
        );
      }
      offset += nl + 1;
      buf = buf.subarray(nl + 1);
    }
    carry = Buffer.from(buf);
  }
  index.end = offset;
  return index;
}

/** A CSV input's header row, as the batch reads it: its names and where the data starts. */
async function csvHeader(
  source: InputFiles,
): Promise<{ names: string[]; dataOffset: number } | undefined> {
  for await (const item of csvItems(source.path, 0, {
    maxRowBytes: rowLimitOf(source.maxRowBytes),
  })) {
    if (item.kind === 'blank') continue;
    return item.kind === 'record'
      ? { names: item.fields.map((c) => c.trim()), dataOffset: item.end }
      : undefined;
  }
  return undefined;
}

/** The input's own column names: a CSV's header, or a JSONL's keys in first-seen order. */
async function inputColumns(source: InputFiles): Promise<string[]> {
  if (source.format === 'csv') return (await csvHeader(source))?.names ?? [];
  const seen = new Set<string>();
  for await (const item of jsonlItems(source.path, 0, rowLimitOf(source.maxRowBytes))) {
    if (item.kind !== 'record' || item.text === undefined) continue;
    for (const key of Object.keys(parseObject(item.text) ?? {})) seen.add(key);
  }
  return [...seen];
}

/**
 * The input's data rows in order with their cells, read by the batch's own reader with the same
 * row limit (and, for a CSV, the same header), so they are numbered exactly as the batch did.
 */
async function* inputRows(
  source: InputFiles,
  columns: readonly string[] | undefined,
): AsyncGenerator<{ row: number; cells: string[] }> {
  const maxRowBytes = rowLimitOf(source.maxRowBytes);
  let items: AsyncGenerator<CsvItem & { text?: string }>;
  if (source.format === 'csv') {
    const header = await csvHeader(source);
    if (!header) return;
    items = csvItems(source.path, header.dataOffset, { maxRowBytes, header: header.names });
  } else {
    items = jsonlItems(source.path, 0, maxRowBytes);
  }
  let row = 0;
  for await (const item of items) {
    if (item.kind === 'blank') continue;
    row += 1;
    // A row the batch could not read (bad text, too large) has no cells to show.
    if (!columns || item.kind === 'bad') yield { row, cells: [] };
    else if (source.format === 'csv') yield { row, cells: item.fields };
    else yield { row, cells: objectCells(columns, parseObject(item.text ?? '')) };
  }
}

async function readLine(fh: FileHandle, [offset, length]: [number, number]): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  const { bytesRead } = await fh.read(buf, 0, length, offset);
  return buf.subarray(0, bytesRead);
}

/**
 * Writes an ordered copy of a batch's output. Input rows with no line are never dropped: a CSV
 * has a row for each (its outcome says `pending`, `not_run` or `missing`) and the report counts
 * them, listing the first.
 */
export async function exportBatchOutput(req: ExportRequest): Promise<ExportReport> {
  // Checked first: the CSV reader's stream would report a missing file only as an unhandled error.
  await access(req.source.path);
  const csv = req.format === 'csv';
  const sorted = csv || req.sorted === true;
  const columns = csv ? new ResultColumns() : undefined;
  const index = await indexLines(req.lines, columns);
  const layout = csv ? csvLayout(await inputColumns(req.source), columns!.ordered()) : undefined;

  let inputRowCount = 0;
  let matched = 0;
  let withoutLine = 0;
  const firstWithoutLine: number[] = [];
  let written = 0;

  const fh = index.lines > 0 ? await open(req.lines, 'r') : undefined;
  try {
    /** Every input row in order, with its line when it has one. */
    async function* walk(read = true): AsyncGenerator<{ cells: string[]; line?: Buffer }> {
      for await (const { row, cells } of inputRows(req.source, layout?.inputColumns)) {
        req.signal?.throwIfAborted();
        inputRowCount = row;
        const at = index.rows.get(row);
        if (at) matched += 1;
        else {
          withoutLine += 1;
          if (firstWithoutLine.length < FIRST_SHOWN) firstWithoutLine.push(row);
        }
        yield { cells, ...(read && at && fh ? { line: await readLine(fh, at) } : {}) };
      }
    }

    await writeAtomically(req.target, async (tmp) => {
      const out = createWriteStream(tmp);
      const signal = req.signal ? { signal: req.signal } : {};
      if (layout) {
        async function* rows(): AsyncGenerator<string[]> {
          yield layout!.header;
          for await (const { cells, line } of walk()) {
            const parsed = line ? (JSON.parse(line.toString('utf8')) as ResultLine) : undefined;
            written += 1;
            yield csvRow(layout!, cells, parsed, req.noLine);
          }
        }
        // Every cell is a string by then (flatten.ts), header included: the options cover them all.
        const options = req.rawCells ? {} : spreadsheetSafeCsv();
        await pipeline(Readable.from(rows()), stringify(options), out, signal);
      } else if (sorted) {
        async function* lines(): AsyncGenerator<Buffer> {
          for await (const { line } of walk()) {
            if (!line) continue;
            written += 1;
            yield Buffer.concat([line, Buffer.from('\n')]);
          }
        }
        await pipeline(Readable.from(lines()), out, signal);
      } else {
        // File order: the complete lines as they are; the input is walked only to count.
        const copy =
          index.end > 0
            ? createReadStream(req.lines, { start: 0, end: index.end - 1 })
            : Readable.from([]);
        await pipeline(copy, out, signal);
        written = index.lines;
        for await (const _ of walk(false)) {
          // Counting rows with and without a line.
        }
      }
    });
  } finally {
    await fh?.close();
  }
  return {
    path: req.target,
    format: req.format,
    sorted,
    inputRows: inputRowCount,
    written,
    withoutLine,
    firstWithoutLine,
    strayLines: index.lines - matched,
  };
}
