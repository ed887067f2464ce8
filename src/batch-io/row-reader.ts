// Reads an input file in chunks from a byte offset (CSV with a header row, or JSONL), maps each
// record to an endpoint's parameters and validates it. A malformed row becomes a problem that
// names the fields and the rule, never the values; reading goes on. Blank lines are counted, not
// rows; a row over the size limit is measured, never read into memory or carried.
import { PcdsError } from '../contract/pcds-error.js';
import {
  formatProblems,
  getEndpoint,
  hasCallbackKey,
  validateInput,
  type EndpointDef,
} from '../contract/index.js';
import {
  endpointParameters,
  paramsOf,
  planColumns,
  rowKey,
  type ColumnPlan,
} from '../batch/columns.js';
import { csvItems, tooLargeProblem, type CsvItem } from './csv-records.js';
import {
  BYTE_ORDER_MARK_PROBLEM,
  hasByteOrderMark,
  isBlankLine,
  physicalLines,
} from './input-lines.js';
import { lineDecoder, UNREADABLE_CHAR } from './text-encoding.js';
import {
  DEFAULT_CHUNK_BYTES,
  DEFAULT_MAX_ROW_BYTES,
  isInvalidRow,
  MAX_ROW_BYTES_LIMIT,
  ROW_TOO_LARGE,
  type InputInspection,
  type InputRow,
  type InputSource,
  type ReadCursor,
  type ReadRowsRequest,
  type ReadRowsResult,
} from '../batch/types.js';

export class InputError extends PcdsError {
  override name = 'InputError';
  constructor(message: string) {
    super('invalid_input_file', message);
  }
}

const encodingOf = (source: InputSource) =>
  source.encoding !== undefined ? { encoding: source.encoding } : {};

/** The row limit asked for, within 1 byte and MAX_ROW_BYTES_LIMIT. */
export const rowLimitOf = (maxRowBytes?: number): number =>
  Math.max(1, Math.min(MAX_ROW_BYTES_LIMIT, Math.floor(maxRowBytes ?? DEFAULT_MAX_ROW_BYTES)));

/** Items of a JSONL file, like csvItems: a record is the line's text. */
export async function* jsonlItems(
  path: string,
  start: number,
  maxRowBytes: number,
  encoding?: string,
): AsyncGenerator<CsvItem & { text?: string }> {
  const decode = lineDecoder(encoding);
  for await (const line of physicalLines(path, start, maxRowBytes)) {
    const at = { begin: line.start, end: line.end };
    if (!line.bytes) {
      yield {
        kind: 'bad',
        ...at,
        code: ROW_TOO_LARGE,
        problem: tooLargeProblem(line.size, maxRowBytes),
      };
    } else if (isBlankLine(line.bytes)) {
      yield { kind: 'blank', ...at };
    } else if (hasByteOrderMark(line.bytes)) {
      yield {
        kind: 'bad',
        ...at,
        code: 'invalid_row',
        problem: `line has ${BYTE_ORDER_MARK_PROBLEM}`,
      };
    } else {
      const { text, encoding: read, fallback } = decode(line.bytes);
      yield {
        kind: 'record',
        ...at,
        fields: [],
        text,
        encoding: read,
        ...(fallback ? { fallback: true as const } : {}),
      };
    }
  }
}

/**
 * A CSV's header row (blank lines before it counted), checked against the endpoint with --map
 * and --ignore. A file without one, or whose header cannot be read, is an InputError.
 */
async function readCsvHeader(
  source: InputSource,
  endpoint: EndpointDef,
  limit: number,
  name: string,
): Promise<{ header: string[]; dataOffset: number; blankLines: number; plan: ColumnPlan }> {
  let blankLines = 0;
  for await (const item of csvItems(source.path, 0, {
    maxRowBytes: limit,
    ...encodingOf(source),
  })) {
    if (item.kind === 'blank') {
      blankLines += 1;
      continue;
    }
    if (item.kind === 'bad')
      throw new InputError(`${name}: the header row cannot be read: ${item.problem}`);
    if (item.fields.some((c) => c.includes('\r')))
      throw new InputError(
        `${name}: lines end with a lone carriage return: save the file with \\n or \\r\\n line ends`,
      );
    const header = item.fields.map((c) => c.trim());
    const plan = planColumns(endpoint, header, source.columnMap, source.ignoreColumns);
    return { header, dataOffset: item.end, blankLines, plan };
  }
  throw new InputError(`${name}: the file is empty (a CSV needs a header row)`);
}

/**
 * Counts the rows and blank lines, reads the CSV header and checks it against the endpoint.
 * `name` is how messages name the file (its path by default).
 */
export async function inspectInput(
  source: InputSource,
  endpointName: string,
  maxRowBytes?: number,
  name = source.path,
): Promise<InputInspection> {
  const endpoint = getEndpoint(endpointName);
  const limit = rowLimitOf(maxRowBytes);
  let total = 0;
  let blankLines = 0;
  let notUtf8Rows = 0;
  const counted = () => ({ blankLines, ...(notUtf8Rows > 0 ? { notUtf8Rows } : {}) });
  if (source.format === 'csv') {
    const found = await readCsvHeader(source, endpoint, limit, name);
    blankLines = found.blankLines;
    const { header, dataOffset } = found;
    // Counted as readRows reads them: with the header, which decides where a quoted field ends.
    for await (const item of csvItems(source.path, dataOffset, {
      maxRowBytes: limit,
      header,
      ...encodingOf(source),
    })) {
      if (item.kind === 'blank') blankLines += 1;
      else total += 1;
      if (item.kind === 'record' && item.fallback) notUtf8Rows += 1;
    }
    return { total, header, dataOffset, ...counted() };
  }
  let checked = false;
  for await (const item of jsonlItems(source.path, 0, limit, source.encoding)) {
    if (item.kind === 'blank') {
      blankLines += 1;
      continue;
    }
    total += 1;
    if (item.kind === 'record' && item.fallback) notUtf8Rows += 1;
    if (!checked && item.text !== undefined) {
      // The first object's keys are checked like a header, so a wrong name fails before any row runs.
      const obj = parseObject(item.text);
      if (obj) {
        planColumns(endpoint, Object.keys(obj), source.columnMap, source.ignoreColumns, true);
        checked = true;
      }
    }
  }
  return { total, dataOffset: 0, ...counted() };
}

export function parseObject(line: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const holdsUnreadable = (value: unknown): boolean =>
  typeof value === 'string'
    ? value.includes(UNREADABLE_CHAR)
    : typeof value === 'object' && value !== null && Object.values(value).some(holdsUnreadable);

/**
 * "name could not be read as utf-8 (...)": the parameters of the endpoint are named, any other
 * key (file content) is counted.
 */
function unreadableProblem(endpoint: EndpointDef, fields: string[], encoding: string): string {
  const known = new Set(endpointParameters(endpoint).names);
  const named = fields.filter((f) => known.has(f));
  const others = fields.length - named.length;
  const what = [
    ...named,
    ...(others > 0 ? [`${others} other field${others === 1 ? '' : 's'}`] : []),
  ];
  return `${what.join(', ')} could not be read as ${encoding} (name the file's encoding with --encoding, or save it as UTF-8)`;
}

function validatedRow(
  endpoint: EndpointDef,
  row: number,
  offset: number,
  given: Record<string, unknown>,
  /** The encoding a file's row was read in; absent for a row handed in by code. */
  encoding?: string,
): InputRow {
  // Only a JSONL file's first keys and a CSV header are checked at start: no later row, nor a
  // JSON value in a cell, picks where its result is delivered (--webhooks sets the callback).
  if (hasCallbackKey(given))
    return {
      row,
      offset,
      problem: 'callback_url is set by --webhooks, not by a row',
      key: rowKey(endpoint, given),
    };
  // A value whose bytes could not be read is left out: the row goes on by what it has left (its
  // email, say, when a name was unreadable), and fails only when that is not enough.
  const unreadable =
    encoding === undefined ? [] : Object.keys(given).filter((k) => holdsUnreadable(given[k]));
  const params = { ...given };
  for (const k of unreadable) delete params[k];
  const v = validateInput(endpoint, params);
  if (v.ok)
    return {
      row,
      offset,
      params: v.value,
      key: rowKey(endpoint, v.value),
      ...(v.trimmed.length > 0 ? { trimmed: v.trimmed } : {}),
      ...(unreadable.length > 0 ? { unreadable } : {}),
    };
  const problems = formatProblems(v.problems);
  return {
    row,
    offset,
    problem: unreadable.length
      ? `${unreadableProblem(endpoint, unreadable, encoding!)}; without it: ${problems}`
      : problems,
    key: rowKey(endpoint, params),
  };
}

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

/** A file's item (a CSV record or a JSONL line) as a row, with the cells it was read from. */
type RowBuilder = (
  item: Exclude<CsvItem, { kind: 'blank' }> & { text?: string },
  row: number,
) => { row: InputRow; cells?: unknown };

/** The JSONL plan from --map and --ignore: keys not named keep their own name. */
function jsonlPlan(source: Pick<InputSource, 'columnMap' | 'ignoreColumns'>): ColumnPlan {
  const inverse = new Map(Object.entries(source.columnMap ?? {}).map(([p, c]) => [c, p]));
  const plan: ColumnPlan = new Map<string, string | null>(inverse);
  for (const c of source.ignoreColumns ?? []) plan.set(c, null);
  return plan;
}

/**
 * The row limit over a row's parameters once serialized: quotes and escapes can make them longer
 * than the row's line, and the limit holds for both.
 */
function withinLimit(got: InputRow, maxRowBytes: number): InputRow {
  if (jsonBytes('params' in got ? got.params : got.key) <= maxRowBytes) return got;
  return {
    row: got.row,
    offset: got.offset,
    code: ROW_TOO_LARGE,
    problem: `the row's parameters are over the limit of ${maxRowBytes} bytes (PCDS_MAX_ROW_BYTES, or the batch's maxRowBytes)`,
    key: {},
  };
}

/** How a file's items become rows: a CSV's by its header, a JSONL's by --map and --ignore. */
function rowBuilder(
  endpoint: EndpointDef,
  source: InputSource,
  header: string[] | undefined,
  maxRowBytes: number,
): RowBuilder {
  let toRow: (
    item: Extract<CsvItem, { kind: 'record' }> & { text?: string },
    row: number,
  ) => {
    row: InputRow;
    cells?: unknown;
  };
  if (source.format === 'csv') {
    if (!header) throw new InputError('CSV rows need the header found by inspectInput');
    const plan = planColumns(endpoint, header, source.columnMap, source.ignoreColumns);
    toRow = ({ fields: record, begin, encoding }, row) => {
      const fields: Record<string, string> = {};
      header.forEach((c, i) => (fields[c] = record[i] ?? ''));
      if (record.length !== header.length) {
        const params = paramsOf(endpoint, plan, fields, false);
        return {
          row: {
            row,
            offset: begin,
            problem: `has ${record.length} fields where the header has ${header.length}`,
            key: rowKey(endpoint, params),
          },
          cells: record,
        };
      }
      return {
        row: validatedRow(endpoint, row, begin, paramsOf(endpoint, plan, fields, true), encoding),
        cells: record,
      };
    };
  } else {
    const plan = jsonlPlan(source);
    toRow = ({ text, begin, encoding }, row) => {
      const obj = parseObject(text ?? '');
      if (!obj)
        return { row: { row, offset: begin, problem: 'line is not a JSON object', key: {} } };
      return {
        row: validatedRow(endpoint, row, begin, paramsOf(endpoint, plan, obj, false), encoding),
        cells: obj,
      };
    };
  }
  return (item, row) => {
    if (item.kind === 'bad')
      return { row: { row, offset: item.begin, code: item.code, problem: item.problem, key: {} } };
    const got = toRow(item, row);
    const checked = withinLimit(got.row, maxRowBytes);
    // A row over the limit carries nothing of what it held.
    return checked === got.row ? got : { row: checked };
  };
}

/** Reads up to `count` rows (and at most about `maxBytes` of them) from the cursor. */
export async function readRows(req: ReadRowsRequest): Promise<ReadRowsResult> {
  const endpoint = getEndpoint(req.endpoint);
  const rows: InputRow[] = [];
  let next: ReadCursor = { ...req.from };
  if (req.from.done || req.count <= 0) return { rows, next };
  const { source } = req;
  const maxRowBytes = rowLimitOf(req.maxRowBytes);
  const maxBytes = req.maxBytes ?? DEFAULT_CHUNK_BYTES;
  const toRow = rowBuilder(endpoint, source, req.header, maxRowBytes);
  const items: AsyncGenerator<CsvItem & { text?: string }> =
    source.format === 'csv'
      ? csvItems(source.path, req.from.byteOffset, {
          maxRowBytes,
          header: req.header,
          ...encodingOf(source),
        })
      : jsonlItems(source.path, req.from.byteOffset, maxRowBytes, source.encoding);

  let bytes = 0;
  try {
    for await (const item of items) {
      if (item.kind === 'blank') continue;
      const row = next.row;
      const got = toRow(item, row).row;
      const size = jsonBytes(got);
      // This row goes in the next chunk: the cursor stays at the end of the last one taken.
      if (rows.length > 0 && bytes + size > maxBytes) return { rows, next };
      bytes += size;
      rows.push(got);
      next = { row: row + 1, byteOffset: item.end, done: false };
      if (rows.length >= req.count) return { rows, next };
    }
  } finally {
    await items.return(undefined);
  }
  return { rows, next: { ...next, done: true } };
}

/** One step of a whole file's reading: a row with its cells, or a blank line. */
export type FileItem =
  { kind: 'row'; row: InputRow; cells?: unknown; end: number } | { kind: 'blank'; end: number };

/**
 * Every row of a file in one pass, by the rules of inspectInput and readRows together: the CSV
 * header (or a JSONL's first object) is checked first and a bad one throws (ColumnError or
 * InputError); then each row comes numbered from 1, with the input's cells (a CSV's fields, a
 * JSONL's object) and `end`, the byte offset read so far. `onHeader` gets a CSV's header before
 * the first item.
 */
export async function* fileRows(
  source: InputSource,
  endpointName: string,
  opts: { maxRowBytes?: number; name?: string; onHeader?: (header: string[]) => void } = {},
): AsyncGenerator<FileItem> {
  const endpoint = getEndpoint(endpointName);
  const limit = rowLimitOf(opts.maxRowBytes);
  const name = opts.name ?? source.path;
  let items: AsyncGenerator<CsvItem & { text?: string }>;
  let toRow: RowBuilder;
  let checked = source.format === 'csv';
  if (source.format === 'csv') {
    const found = await readCsvHeader(source, endpoint, limit, name);
    opts.onHeader?.(found.header);
    for (let i = 0; i < found.blankLines; i++) yield { kind: 'blank', end: found.dataOffset };
    toRow = rowBuilder(endpoint, source, found.header, limit);
    items = csvItems(source.path, found.dataOffset, {
      maxRowBytes: limit,
      header: found.header,
      ...encodingOf(source),
    });
  } else {
    toRow = rowBuilder(endpoint, source, undefined, limit);
    items = jsonlItems(source.path, 0, limit, source.encoding);
  }
  let row = 0;
  try {
    for await (const item of items) {
      if (item.kind === 'blank') {
        yield { kind: 'blank', end: item.end };
        continue;
      }
      if (!checked && item.text !== undefined) {
        // As inspectInput: the first object's keys are checked like a header.
        const obj = parseObject(item.text);
        if (obj) {
          planColumns(endpoint, Object.keys(obj), source.columnMap, source.ignoreColumns, true);
          checked = true;
        }
      }
      row += 1;
      yield { kind: 'row', ...toRow(item, row), end: item.end };
    }
  } finally {
    await items.return(undefined);
  }
}

/**
 * A row handed in by code (a service's object), judged as a JSONL line's object is: parameters
 * checked against the endpoint, unknown keys counted and never quoted, the row limit on its JSON.
 */
export function objectRow(
  endpointName: string,
  obj: unknown,
  row: number,
  maxRowBytes?: number,
): { row: InputRow; cells?: unknown } {
  const endpoint = getEndpoint(endpointName);
  const limit = rowLimitOf(maxRowBytes);
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj))
    return { row: { row, offset: 0, problem: 'row is not a JSON object', key: {} } };
  let size: number;
  try {
    size = jsonBytes(obj);
  } catch {
    // A cycle or a BigInt: nothing the service could be sent.
    return { row: { row, offset: 0, problem: 'row cannot be written as JSON', key: {} } };
  }
  if (size > limit)
    return {
      row: { row, offset: 0, code: ROW_TOO_LARGE, problem: tooLargeProblem(size, limit), key: {} },
    };
  const params = paramsOf(endpoint, new Map(), obj as Record<string, unknown>, false);
  const got = withinLimit(validatedRow(endpoint, row, 0, params), limit);
  return isInvalidRow(got) && got.code === ROW_TOO_LARGE ? { row: got } : { row: got, cells: obj };
}

/** Input format from the file name, unless given; `name` is how a message names the file. */
export function formatOf(path: string, given?: string, name = path): 'csv' | 'jsonl' {
  if (given === 'csv' || given === 'jsonl') return given;
  if (given) throw new InputError(`--format must be csv or jsonl, not "${given}"`);
  if (/\.csv$/i.test(path)) return 'csv';
  if (/\.(jsonl|ndjson)$/i.test(path)) return 'jsonl';
  throw new InputError(
    `cannot tell the format of ${name} from its name: pass --format csv or --format jsonl`,
  );
}
