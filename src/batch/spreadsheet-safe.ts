// CSV cells a spreadsheet would run as formulas (OWASP, CSV Injection), made inert. The standard
// rule is csv-stringify's own `escape_formulas`: a `'` before a cell that starts with `=`, `+`,
// `-`, `@`, tab or CR, or the full-width `＝`, `＋`, `－`, `＠`. What that rule does not see is
// added here, as a cast that runs before it: a trigger behind leading blanks or invisible
// characters, a leading line feed, and a trigger behind a `;`, tab or line break inside the cell
// (where a spreadsheet that splits on `;`, or a reader that splits lines, starts a new cell).
// Pure: the CSV writers (batch-io/export.ts, store/export.ts) pass these options to stringify.
import type { Options } from 'csv-stringify';

/** What makes a cell a formula once it is at the start of a cell. */
const TRIGGER = '=+\\-@\\uFF1D\\uFF0B\\uFF0D\\uFF20';
/** Blanks and characters a spreadsheet may skip before the trigger: spaces, controls, format characters (zero-width, BOM). */
const INVISIBLE = '\\p{White_Space}\\p{Cc}\\p{Cf}';

const LEADING = new RegExp(`^(?:\\n|[${INVISIBLE}]+(?=[${TRIGGER}]))`, 'u');
const INSIDE = new RegExp(`([;\\t\\r\\n])([${INVISIBLE}]*)(?=[${TRIGGER}])`, 'gu');

/**
 * The cell with what escape_formulas misses made inert: a `'` before each trigger that follows a
 * `;`, tab or line break (and the blanks after it), then a `'` in front when a trigger follows
 * leading blanks or invisible characters or the cell starts with a line feed. Others unchanged.
 */
export function beyondEscapeFormulas(cell: string): string {
  const inside = cell.replace(INSIDE, "$1$2'");
  return LEADING.test(inside) ? `'${inside}` : inside;
}

/**
 * csv-stringify options that write every cell (header included) as text a spreadsheet shows and
 * never runs. A plain negative number (`-5`) or an E.164 phone number (`+33...`) gets its `'` too:
 * the rule cannot tell a number from `-1+1`, and a spreadsheet shows the same text without it.
 */
export function spreadsheetSafeCsv(): Options {
  return {
    escape_formulas: true,
    cast: { string: (value: string) => beyondEscapeFormulas(value) },
  };
}
