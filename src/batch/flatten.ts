// How a result line becomes a CSV row: the result flattened into dotted columns (arrays as JSON
// text), every value as cell text, and a column order that does not depend on completion order.
// Pure: the exporter (batch-io/export.ts) feeds it one line at a time.
import type { ResultLine } from './types.js';

/** Columns every CSV export has between the input's columns and the result's. */
export const OUTCOME_COLUMNS = ['outcome', 'code', 'message'] as const;

/** What the outcome cell says for an input row with no result line. */
export type NoLineLabel = 'pending' | 'not_run' | 'missing';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value as one cell: text as it is, numbers and booleans as JSON writes them, null empty. */
export function cellText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  return JSON.stringify(value);
}

/**
 * A result as [column, value] pairs in its own key order: nested objects give dotted names
 * (`social_profiles.linkedin.url`), arrays and other leaves are kept as they are, empty objects
 * give no column. A result that is not an object (an array, a scalar) is one column named
 * `result`. What a typed export (Parquet) reads; flattenResult makes cell text of it.
 */
export function flattenValues(result: unknown): [string, unknown][] {
  if (result === undefined) return [];
  if (!isPlainObject(result)) return [['result', result]];
  const out: [string, unknown][] = [];
  const walk = (obj: Record<string, unknown>, prefix: string) => {
    for (const [k, v] of Object.entries(obj)) {
      const name = prefix + k;
      if (isPlainObject(v)) walk(v, `${name}.`);
      else out.push([name, v]);
    }
  };
  walk(result, '');
  return out;
}

/** A result as [column, cell] pairs (flattenValues, arrays as JSON text). */
export function flattenResult(result: unknown): [string, string][] {
  return flattenValues(result).map(([name, value]) => [name, cellText(value)]);
}

/**
 * The result columns of an export, in the order they first appear when the rows are taken in
 * row order (row 1 first), whatever order the lines are noted in. So two exports of the same
 * results have the same columns in the same order.
 */
export class ResultColumns {
  private readonly first = new Map<string, { row: number; at: number }>();

  note(row: number, columns: readonly string[]): void {
    columns.forEach((name, at) => {
      const seen = this.first.get(name);
      if (!seen || row < seen.row || (row === seen.row && at < seen.at))
        this.first.set(name, { row, at });
    });
  }

  ordered(): string[] {
    return [...this.first.entries()]
      .sort(([, a], [, b]) => a.row - b.row || a.at - b.at)
      .map(([name]) => name);
  }
}

export interface CsvLayout {
  /** The header row: input columns, outcome columns, result columns. */
  header: string[];
  inputColumns: string[];
  /** The result's own (flattened) names, in the order of their header cells. */
  resultColumns: string[];
}

/**
 * Lays out the header. A result column whose name is already taken (an input column `email`
 * and a result field `email`, say) is headed `result.email`, so no two header cells are equal.
 */
export function csvLayout(inputColumns: readonly string[], resultColumns: readonly string[]) {
  const taken = new Set<string>([...inputColumns, ...OUTCOME_COLUMNS]);
  const resultHeader = resultColumns.map((name) => {
    let label = name;
    while (taken.has(label)) label = `result.${label}`;
    taken.add(label);
    return label;
  });
  return {
    header: [...inputColumns, ...OUTCOME_COLUMNS, ...resultHeader],
    inputColumns: [...inputColumns],
    resultColumns: [...resultColumns],
  } satisfies CsvLayout;
}

/** One CSV row: the input's cells as given, then the outcome, then the flattened result. */
export function csvRow(
  layout: CsvLayout,
  inputCells: readonly string[],
  line: ResultLine | undefined,
  noLine: NoLineLabel,
): string[] {
  const cells = layout.inputColumns.map((_, i) => inputCells[i] ?? '');
  if (!line) {
    cells.push(noLine, '', '');
    for (let i = 0; i < layout.resultColumns.length; i++) cells.push('');
    return cells;
  }
  cells.push(line.outcome, line.code ?? '', line.message ?? '');
  const flat = new Map(flattenResult(line.result));
  for (const name of layout.resultColumns) cells.push(flat.get(name) ?? '');
  return cells;
}

/** The cells of a JSONL input object under the export's input columns. */
export function objectCells(columns: readonly string[], obj: Record<string, unknown> | undefined) {
  return columns.map((c) => (obj && Object.hasOwn(obj, c) ? cellText(obj[c]) : ''));
}
