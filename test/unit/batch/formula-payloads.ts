// Cells a spreadsheet would run as a formula, as a test writes them and as the CSV must show
// them, and a reading of "runs as a formula" that does not depend on the code under test.

/** [cell written, cell read back from the CSV]. */
export const FORMULA_PAYLOADS: [string, string][] = [
  // OWASP's triggers as the first character (csv-stringify's escape_formulas).
  ['=1+1', "'=1+1"],
  ['+1', "'+1"],
  ['-1+1', "'-1+1"],
  ['@SUM(1)', "'@SUM(1)"],
  ['\t=1', "'\t'=1"],
  ['\r=1', "'\r'=1"],
  ['=HYPERLINK("http://x","y")', `'=HYPERLINK("http://x","y")`],
  // Neutralised too (documented): the rule cannot tell a number from a formula.
  ['-5', "'-5"],
  // Full-width forms.
  ['\uFF1D1+1', "'\uFF1D1+1"],
  ['\uFF0B1', "'\uFF0B1"],
  // Behind a line feed, blanks or invisible characters.
  ['\n=1+1', "'\n'=1+1"],
  [' =1+1', "' =1+1"],
  ['   @SUM(1)', "'   @SUM(1)"],
  ['\u00A0=1', "'\u00A0=1"],
  ['\u200B=1+1', "'\u200B=1+1"],
  ['\u2061=1', "'\u2061=1"],
  ['\u2060\u200B \uFF1D1', "'\u2060\u200B \uFF1D1"],
  // Where a spreadsheet splitting on `;`, or a reader splitting lines, starts a new cell.
  ['a;=1+1', "a;'=1+1"],
  ['a; \u200B=1+1', "a; \u200B'=1+1"],
  ['note\n=HYPERLINK("http://x")', `note\n'=HYPERLINK("http://x")`],
  ['x\t+1', "x\t'+1"],
];

/**
 * A byte-order mark before the trigger: only in results (an input row holding one is refused as
 * a joined file, so it never reaches an export's input cells).
 */
export const RESULT_ONLY_PAYLOADS: [string, string][] = [['\uFEFF=1', "'\uFEFF=1"]];

/** Cells no spreadsheet runs: left exactly as they are. */
export const PLAIN_CELLS = [
  'plain value',
  'a=1',
  '',
  "'already",
  'x@example.com',
  '5-1',
  ' leading blank',
  'a;b',
  'a, -b',
  'multi\nline',
];

const TRIGGER_AFTER_BLANKS = /^[\p{White_Space}\p{Cc}\p{Cf}]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/u;

/**
 * Whether a spreadsheet could run the cell, or a part of it that a `;`, tab or line break starts
 * (read by a program that splits there): a trigger after nothing but blanks and invisible
 * characters, or a cell that starts with a tab, CR or LF (OWASP).
 */
export function couldRunAsFormula(cell: string): boolean {
  if (/^[\t\r\n]/.test(cell)) return true;
  return [cell, ...cell.split(/[;\t\r\n]/).slice(1)].some((part) =>
    TRIGGER_AFTER_BLANKS.test(part),
  );
}
