// Reads an input file in chunks from a byte offset (CSV with a header row, or JSONL), maps each
// record to an endpoint's parameters and validates it. A malformed row becomes a problem that
// names the fields and the rule, never the values; reading goes on.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { parse, type Info } from 'csv-parse';
import { formatProblems, getEndpoint, validateInput, type EndpointDef } from '../contract/index.js';
import { paramsOf, planColumns, rowKey, type ColumnPlan } from './columns.js';
import type {
  InputInspection,
  InputRow,
  InputSource,
  ReadCursor,
  ReadRowsRequest,
  ReadRowsResult,
} from './types.js';

export class InputError extends Error {
  override name = 'InputError';
}

const csvOptions = (atStart: boolean) => ({
  info: true as const,
  skip_empty_lines: true,
  // A row with the wrong number of fields is a bad row, not the end of the file.
  relax_column_count: true,
  bom: atStart,
});

interface CsvRecord {
  record: string[];
  info: Info;
}

/** Yields [record, byte offset of its start, byte offset after it] from `start`. */
export async function* csvRecords(
  path: string,
  start: number,
): AsyncGenerator<[string[], number, number]> {
  const stream = createReadStream(path, { start });
  const parser = stream.pipe(parse(csvOptions(start === 0)));
  let consumed = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<CsvRecord>) {
      const begin = start + consumed;
      consumed = info.bytes;
      yield [record, begin, start + consumed];
    }
  } catch (err) {
    throw new InputError(`${path}: not valid CSV: ${(err as Error).message}`);
  } finally {
    stream.destroy();
    parser.destroy();
  }
}

/** Yields [line, start offset, end offset] of each non-blank line from `start`. */
export async function* jsonLines(
  path: string,
  start: number,
): AsyncGenerator<[string, number, number]> {
  const fh = await open(path, 'r');
  try {
    const block = Buffer.alloc(1 << 16);
    let pending = Buffer.alloc(0);
    let pendingStart = start;
    let position = start;
    for (;;) {
      const { bytesRead } = await fh.read(block, 0, block.length, position);
      const eof = bytesRead === 0;
      position += bytesRead;
      pending = pending.length
        ? Buffer.concat([pending, block.subarray(0, bytesRead)])
        : Buffer.from(block.subarray(0, bytesRead));
      let nl: number;
      while ((nl = pending.indexOf(0x0a)) !== -1 || (eof && pending.length > 0)) {
        const end = nl === -1 ? pending.length : nl + 1;
        const line = pending
          .subarray(0, end)
          .toString('utf8')
          .replace(/\r?\n$/, '');
        const lineStart = pendingStart;
        pending = pending.subarray(end);
        pendingStart += end;
        if (line.trim() !== '') yield [line, lineStart, pendingStart];
      }
      if (eof) return;
    }
  } finally {
    await fh.close();
  }
}

/** Counts the rows, reads the CSV header and checks it against the endpoint. */
export async function inspectInput(
  source: InputSource,
  endpointName: string,
): Promise<InputInspection> {
  const endpoint = getEndpoint(endpointName);
  let total = 0;
  if (source.format === 'csv') {
    let header: string[] | undefined;
    let dataOffset = 0;
    for await (const [record, , end] of csvRecords(source.path, 0)) {
      if (!header) {
        header = record.map((c) => c.trim());
        dataOffset = end;
        planColumns(endpoint, header, source.columnMap, source.ignoreColumns);
      } else total += 1;
    }
    if (!header)
      throw new InputError(`${source.path}: the file is empty (a CSV needs a header row)`);
    return { total, header, dataOffset };
  }
  let checked = false;
  for await (const [line] of jsonLines(source.path, 0)) {
    total += 1;
    if (!checked) {
      // The first object's keys are checked like a header, so a wrong name fails before any row runs.
      const obj = parseObject(line);
      if (obj) {
        planColumns(endpoint, Object.keys(obj), source.columnMap, source.ignoreColumns, true);
        checked = true;
      }
    }
  }
  return { total, dataOffset: 0 };
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
  const v = validateInput(endpoint, params);
  if (v.ok) return { row, offset, params: v.value, key: rowKey(endpoint, v.value) };
  return { row, offset, problem: formatProblems(v.problems), key: rowKey(endpoint, params) };
}

/** Reads up to `count` rows from the cursor. */
export async function readRows(req: ReadRowsRequest): Promise<ReadRowsResult> {
  const endpoint = getEndpoint(req.endpoint);
  const rows: InputRow[] = [];
  let next: ReadCursor = { ...req.from };
  if (req.from.done || req.count <= 0) return { rows, next };
  const { source } = req;

  if (source.format === 'csv') {
    if (!req.header) throw new InputError('CSV rows need the header found by inspectInput');
    const header = req.header;
    const plan = planColumns(endpoint, header, source.columnMap, source.ignoreColumns);
    for await (const [record, begin, end] of csvRecords(source.path, req.from.byteOffset)) {
      const row = next.row;
      next = { row: row + 1, byteOffset: end, done: false };
      const fields: Record<string, string> = {};
      header.forEach((c, i) => (fields[c] = record[i] ?? ''));
      if (record.length !== header.length) {
        const params = paramsOf(endpoint, plan, fields, false);
        rows.push({
          row,
          offset: begin,
          problem: `has ${record.length} fields where the header has ${header.length}`,
          key: rowKey(endpoint, params),
        });
      } else {
        rows.push(validatedRow(endpoint, row, begin, paramsOf(endpoint, plan, fields, true)));
      }
      if (rows.length >= req.count) return { rows, next };
    }
    return { rows, next: { ...next, done: true } };
  }

  const inverse = new Map(Object.entries(source.columnMap ?? {}).map(([p, c]) => [c, p]));
  const plan: ColumnPlan = new Map<string, string | null>(inverse);
  for (const c of source.ignoreColumns ?? []) plan.set(c, null);
  for await (const [line, begin, end] of jsonLines(source.path, req.from.byteOffset)) {
    const row = next.row;
    next = { row: row + 1, byteOffset: end, done: false };
    const obj = parseObject(line);
    if (!obj) {
      rows.push({ row, offset: begin, problem: 'line is not a JSON object', key: {} });
    } else {
      rows.push(validatedRow(endpoint, row, begin, paramsOf(endpoint, plan, obj, false)));
    }
    if (rows.length >= req.count) return { rows, next };
  }
  return { rows, next: { ...next, done: true } };
}

/** Input format from the file name, unless given. */
export function formatOf(path: string, given?: string): 'csv' | 'jsonl' {
  if (given === 'csv' || given === 'jsonl') return given;
  if (given) throw new InputError(`--format must be csv or jsonl, not "${given}"`);
  if (/\.csv$/i.test(path)) return 'csv';
  if (/\.(jsonl|ndjson)$/i.test(path)) return 'jsonl';
  throw new InputError(
    `cannot tell the format of ${path} from its name: pass --format csv or --format jsonl`,
  );
}
