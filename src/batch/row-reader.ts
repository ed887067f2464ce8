// Reads an input file in chunks from a byte offset (CSV with a header row, or JSONL), maps each
// record to an endpoint's parameters and validates it. A malformed row becomes a problem that
// names the fields and the rule, never the values; reading goes on. Blank lines are counted, not
// rows; a row over the size limit is measured, never read into memory or carried.
import {
  formatProblems,
  getEndpoint,
  hasCallbackKey,
  validateInput,
  type EndpointDef,
} from '../contract/index.js';
import { paramsOf, planColumns, rowKey, type ColumnPlan } from './columns.js';
import { csvItems, tooLargeProblem, type CsvItem } from './csv-records.js';
import { describeTextProblem, isBlankLine, physicalLines, textProblem } from './input-lines.js';
import {
  DEFAULT_CHUNK_BYTES,
  DEFAULT_MAX_ROW_BYTES,
  MAX_ROW_BYTES_LIMIT,
  ROW_TOO_LARGE,
  type InputInspection,
  type InputRow,
  type InputSource,
  type ReadCursor,
  type ReadRowsRequest,
  type ReadRowsResult,
} from './types.js';

export class InputError extends Error {
  override name = 'InputError';
}

/** The row limit asked for, within 1 byte and MAX_ROW_BYTES_LIMIT. */
export const rowLimitOf = (maxRowBytes?: number): number =>
  Math.max(1, Math.min(MAX_ROW_BYTES_LIMIT, Math.floor(maxRowBytes ?? DEFAULT_MAX_ROW_BYTES)));

/** Items of a JSONL file, like csvItems: a record is the line's text. */
export async function* jsonlItems(
  path: string,
  start: number,
  maxRowBytes: number,
): AsyncGenerator<CsvItem & { text?: string }> {
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
    } else {
      const issue = textProblem(line.bytes);
      if (issue)
        yield {
          kind: 'bad',
          ...at,
          code: 'invalid_row',
          problem: `line has ${describeTextProblem(issue)}`,
        };
      else yield { kind: 'record', ...at, fields: [], text: line.bytes.toString('utf8') };
    }
  }
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
  if (source.format === 'csv') {
    let header: string[] | undefined;
    let dataOffset = 0;
    for await (const item of csvItems(source.path, 0, { maxRowBytes: limit })) {
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
      header = item.fields.map((c) => c.trim());
      dataOffset = item.end;
      planColumns(endpoint, header, source.columnMap, source.ignoreColumns);
      break;
    }
    if (!header) throw new InputError(`${name}: the file is empty (a CSV needs a header row)`);
    // Counted as readRows reads them: with the header, which decides where a quoted field ends.
    for await (const item of csvItems(source.path, dataOffset, { maxRowBytes: limit, header })) {
      if (item.kind === 'blank') blankLines += 1;
      else total += 1;
    }
    return { total, header, dataOffset, blankLines };
  }
  let checked = false;
  for await (const item of jsonlItems(source.path, 0, limit)) {
    if (item.kind === 'blank') {
      blankLines += 1;
      continue;
    }
    total += 1;
    if (!checked && item.text !== undefined) {
      // The first object's keys are checked like a header, so a wrong name fails before any row runs.
      const obj = parseObject(item.text);
      if (obj) {
        planColumns(endpoint, Object.keys(obj), source.columnMap, source.ignoreColumns, true);
        checked = true;
      }
    }
  }
  return { total, dataOffset: 0, blankLines };
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

function validatedRow(
  endpoint: EndpointDef,
  row: number,
  offset: number,
  params: Record<string, unknown>,
): InputRow {
  // Only a JSONL file's first keys and a CSV header are checked at start: no later row, nor a
  // JSON value in a cell, picks where its result is delivered (--webhooks sets the callback).
  if (hasCallbackKey(params))
    return {
      row,
      offset,
      problem: 'callback_url is set by --webhooks, not by a row',
      key: rowKey(endpoint, params),
    };
  const v = validateInput(endpoint, params);
  if (v.ok) return { row, offset, params: v.value, key: rowKey(endpoint, v.value) };
  return { row, offset, problem: formatProblems(v.problems), key: rowKey(endpoint, params) };
}

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

/** Reads up to `count` rows (and at most about `maxBytes` of them) from the cursor. */
export async function readRows(req: ReadRowsRequest): Promise<ReadRowsResult> {
  const endpoint = getEndpoint(req.endpoint);
  const rows: InputRow[] = [];
  let next: ReadCursor = { ...req.from };
  if (req.from.done || req.count <= 0) return { rows, next };
  const { source } = req;
  const maxRowBytes = rowLimitOf(req.maxRowBytes);
  const maxBytes = req.maxBytes ?? DEFAULT_CHUNK_BYTES;

  let toRow: (
    item: Extract<CsvItem, { kind: 'record' }> & { text?: string },
    row: number,
  ) => InputRow;
  let items: AsyncGenerator<CsvItem & { text?: string }>;
  if (source.format === 'csv') {
    if (!req.header) throw new InputError('CSV rows need the header found by inspectInput');
    const header = req.header;
    const plan = planColumns(endpoint, header, source.columnMap, source.ignoreColumns);
    items = csvItems(source.path, req.from.byteOffset, { maxRowBytes, header });
    toRow = ({ fields: record, begin }, row) => {
      const fields: Record<string, string> = {};
      header.forEach((c, i) => (fields[c] = record[i] ?? ''));
      if (record.length !== header.length) {
        const params = paramsOf(endpoint, plan, fields, false);
        return {
          row,
          offset: begin,
          problem: `has ${record.length} fields where the header has ${header.length}`,
          key: rowKey(endpoint, params),
        };
      }
      return validatedRow(endpoint, row, begin, paramsOf(endpoint, plan, fields, true));
    };
  } else {
    const inverse = new Map(Object.entries(source.columnMap ?? {}).map(([p, c]) => [c, p]));
    const plan: ColumnPlan = new Map<string, string | null>(inverse);
    for (const c of source.ignoreColumns ?? []) plan.set(c, null);
    items = jsonlItems(source.path, req.from.byteOffset, maxRowBytes);
    toRow = ({ text, begin }, row) => {
      const obj = parseObject(text ?? '');
      if (!obj) return { row, offset: begin, problem: 'line is not a JSON object', key: {} };
      return validatedRow(endpoint, row, begin, paramsOf(endpoint, plan, obj, false));
    };
  }

  let bytes = 0;
  try {
    for await (const item of items) {
      if (item.kind === 'blank') continue;
      const row = next.row;
      let got: InputRow =
        item.kind === 'bad'
          ? { row, offset: item.begin, code: item.code, problem: item.problem, key: {} }
          : toRow(item, row);
      // Quotes and escapes can make a row's parameters longer than its line: the limit holds for both.
      if (jsonBytes('params' in got ? got.params : got.key) > maxRowBytes) {
        got = {
          row,
          offset: item.begin,
          code: ROW_TOO_LARGE,
          problem: `the row's parameters are over the limit of ${maxRowBytes} bytes (PCDS_MAX_ROW_BYTES, or the batch's maxRowBytes)`,
          key: {},
        };
      }
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
