// CSV records from a byte offset, one at a time, each judged on its own: a stray quote, a
// byte-order mark or a row over the limit make a bad record (with a reason that names the column,
// never the value), and reading goes on at the next line. Each line is decoded on its own
// (text-encoding.ts). csv-parse splits the fields; its messages quote the value, so only its
// error code is used.
import { parse } from 'csv-parse/sync';
import {
  BYTE_ORDER_MARK_PROBLEM,
  hasByteOrderMark,
  isBlankLine,
  physicalLines,
  type PhysicalLine,
} from './input-lines.js';
import { lineDecoder } from './text-encoding.js';
import { INVALID_ROW, ROW_TOO_LARGE } from '../batch/types.js';

/** How a record's text was read: its encoding, and whether that was the fallback for non-UTF-8. */
export interface RecordText {
  encoding: string;
  fallback?: true;
}

export type CsvItem =
  | { kind: 'blank'; begin: number; end: number }
  | ({ kind: 'record'; begin: number; end: number; fields: string[] } & RecordText)
  | { kind: 'bad'; begin: number; end: number; code: string; problem: string };

type Parsed = { fields: string[] } | { error: string; index: number };

const QUOTE_NOT_CLOSED = 'CSV_QUOTE_NOT_CLOSED';

function parseRecord(text: string): Parsed {
  // Without a quote a line is its fields joined by commas: no parser needed.
  if (!text.includes('"')) return { fields: text.split(',') };
  try {
    const records: string[][] = parse(text, {
      relax_column_count: true,
      // The line's own terminator is gone; a newline left is inside a quoted field.
      record_delimiter: '\n',
    });
    if (records.length !== 1) return { error: 'several_records', index: 0 };
    return { fields: records[0] };
  } catch (err) {
    const e = err as { code?: unknown; index?: unknown };
    return {
      error: typeof e.code === 'string' ? e.code : 'unknown',
      index: typeof e.index === 'number' ? e.index : 0,
    };
  }
}

export function tooLargeProblem(size: number, max: number): string {
  return `the row is ${size} bytes, over the limit of ${max} bytes (PCDS_MAX_ROW_BYTES, or the batch's maxRowBytes)`;
}

export interface CsvReadOptions {
  maxRowBytes: number;
  /** The header's names, for messages and the field count of a record that spans lines. */
  header?: string[];
  /** The file's encoding as the caller named it; UTF-8 with the fallback when absent. */
  encoding?: string;
}

/** Yields the blank lines and records from `start` (a record's first byte). */
export async function* csvItems(
  path: string,
  start: number,
  opts: CsvReadOptions,
): AsyncGenerator<CsvItem> {
  const { maxRowBytes, header } = opts;
  const decode = lineDecoder(opts.encoding);
  const column = (i: number) =>
    header && i < header.length ? `column "${header[i]}"` : `field ${i + 1}`;
  const lines = physicalLines(path, start, maxRowBytes);
  // Lines read ahead while looking for the end of a quoted field, handed out again if it has none.
  const ahead: PhysicalLine[] = [];
  const nextLine = async (): Promise<PhysicalLine | undefined> => {
    const kept = ahead.shift();
    if (kept) return kept;
    const r = await lines.next();
    return r.done ? undefined : r.value;
  };
  const bad = (line: PhysicalLine, problem: string, code = INVALID_ROW): CsvItem => ({
    kind: 'bad',
    begin: line.start,
    end: line.end,
    code,
    problem,
  });

  try {
    for (;;) {
      const line = await nextLine();
      if (!line) return;
      if (!line.bytes) {
        yield bad(line, tooLargeProblem(line.size, maxRowBytes), ROW_TOO_LARGE);
        continue;
      }
      if (isBlankLine(line.bytes)) {
        yield { kind: 'blank', begin: line.start, end: line.end };
        continue;
      }
      if (hasByteOrderMark(line.bytes)) {
        // Latin-1 keeps every byte as one character, so the commas and quotes still split it.
        const parsed = parseRecord(line.bytes.toString('latin1'));
        const at =
          'fields' in parsed
            ? parsed.fields.findIndex((f) => hasByteOrderMark(Buffer.from(f, 'latin1')))
            : -1;
        yield bad(line, `${at >= 0 ? `${column(at)} has ` : 'has '}${BYTE_ORDER_MARK_PROBLEM}`);
        continue;
      }
      const decoded = decode(line.bytes);
      const read: RecordText = {
        encoding: decoded.encoding,
        ...(decoded.fallback ? { fallback: true as const } : {}),
      };
      const text = decoded.text;
      const parsed = parseRecord(text);
      if ('fields' in parsed) {
        yield { kind: 'record', begin: line.start, end: line.end, fields: parsed.fields, ...read };
        continue;
      }
      if (parsed.error !== QUOTE_NOT_CLOSED) {
        yield bad(line, csvProblem(parsed.error, column(parsed.index)));
        continue;
      }
      // A quoted field may hold line breaks: read on while it stays open, within the row limit.
      const taken: PhysicalLine[] = [];
      let joined = text;
      let size = line.size;
      let last = line;
      let result: Parsed = parsed;
      for (;;) {
        const more = await nextLine();
        if (!more) break;
        taken.push(more);
        size += last.eol.length + more.size;
        if (!more.bytes || hasByteOrderMark(more.bytes) || size > maxRowBytes) {
          result = { error: 'gave_up', index: 0 };
          break;
        }
        const continued = decode(more.bytes);
        if (continued.fallback)
          Object.assign(read, { encoding: continued.encoding, fallback: true });
        joined += last.eol + continued.text;
        last = more;
        // Without a quote the line cannot close the field: no need to parse it all again.
        if (!more.bytes.includes(0x22)) continue;
        result = parseRecord(joined);
        if (!('error' in result) || result.error !== QUOTE_NOT_CLOSED) break;
      }
      if ('fields' in result && (!header || result.fields.length === header.length)) {
        yield { kind: 'record', begin: line.start, end: last.end, fields: result.fields, ...read };
        continue;
      }
      // No sound record across lines: the quote is this line's fault, and the next lines are
      // read again on their own.
      ahead.unshift(...taken);
      yield bad(
        line,
        `${column(parsed.index)}: a quoted field is not closed on its line (a stray quote?)`,
      );
    }
  } finally {
    await lines.return(undefined);
  }
}

function csvProblem(code: string, where: string): string {
  switch (code) {
    case 'INVALID_OPENING_QUOTE':
      return `${where}: a quote inside a field that does not start with one (a stray quote? quote the whole field and double the quotes inside)`;
    case 'CSV_INVALID_CLOSING_QUOTE':
      return `${where}: text after the closing quote of a quoted field (a stray quote?)`;
    default:
      return `the row is not valid CSV (${code})`;
  }
}
