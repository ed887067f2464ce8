// How a batch reads for people: its progress line, its summary, what an export wrote, what a
// running batch last published; shared by the start, status, watch and export commands.
import type { PublishedProgress } from '../../client/batch-launch.js';
import { MIN_JOB_SAMPLES } from '../../batch/job-duration.js';
import type { BatchProgress, BatchSummary, ExportReport, FailedRow } from '../../batch/types.js';
import { summaryPathOf } from '../../store/outputs.js';

export const fmtSeconds = (s: number | undefined) => {
  if (s === undefined) return '--';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
};

/**
 * A paused batch has no ETA: it says so. Under `pcds dev --time-scale`/`--no-limits` the ETA says
 * it is not the real service's pace (`pace`, from paceNote).
 */
export const etaText = (
  p: Pick<BatchProgress, 'etaSeconds' | 'paused' | 'state'>,
  pace?: string,
) =>
  p.paused || p.state === 'paused'
    ? 'paused'
    : `${fmtSeconds(p.etaSeconds)}${pace && p.etaSeconds !== undefined ? ` (${pace})` : ''}`;

const failedByCode = (p: { failedByCode: Record<string, number> }) =>
  Object.entries(p.failedByCode)
    .map(([code, n]) => `${code} ${n}`)
    .join(', ');

/** One line of progress, for status output and logs. */
export function progressLine(p: BatchProgress, pace?: string): string {
  const failed = failedByCode(p);
  const spend = spendText(p);
  return (
    `${p.state}: ${p.done}/${p.total} rows | found ${p.found}, empty ${p.empty}, failed ${p.failed}` +
    `${failed ? ` (${failed})` : ''}${spend ? ` | ${spend}` : ''} | ${p.inFlight} in flight (window ${p.window}) | ${p.rowsPerSecond} rows/s | ETA ${etaText(p, pace)}`
  );
}

/** `credits 12 of 20, 3 skipped (credit_budget), 5 duplicates not sent`, or nothing to say. */
function spendText(
  p: Pick<
    BatchProgress,
    'credits' | 'maxCredits' | 'skipped' | 'duplicates' | 'cached' | 'creditsSaved'
  >,
): string | undefined {
  const parts = [
    ...(p.maxCredits !== undefined ? [`credits ${p.credits ?? 0} of ${p.maxCredits}`] : []),
    ...(p.skipped ? [`${p.skipped} skipped (credit_budget)`] : []),
    ...(p.duplicates ? [`${p.duplicates} duplicates not sent`] : []),
    ...(p.cached
      ? [`${p.cached} from the result cache (~${p.creditsSaved ?? 0} credits saved)`]
      : []),
  ];
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/**
 * What the rows cost and how long their jobs take: requests (submit and polls) per row found or
 * empty, and the learned job duration that times each new row's first poll.
 */
export function requestsText(
  p: Pick<BatchProgress, 'requestsPerRow' | 'jobMsEstimate' | 'cached'>,
): string {
  // Rows the result cache answered send nothing: none is measured, none is missing.
  const fromCache = p.cached ? ` (the result cache answered ${p.cached} rows: they send none)` : '';
  const perRow =
    p.requestsPerRow !== undefined
      ? `${p.requestsPerRow} requests per found/empty row`
      : fromCache
        ? `requests per row: none measured${fromCache}`
        : 'requests per row: none measured yet (no row found or empty)';
  const estimate =
    p.jobMsEstimate !== undefined
      ? `job duration estimate ${p.jobMsEstimate} ms`
      : `job duration estimate: not learned yet (it needs ${MIN_JOB_SAMPLES} rows found or empty${fromCache ? ' from the service' : ''})`;
  return `${perRow}; ${estimate}`;
}

/** `row 3 invalid_row, row 8 not_found, ...` (and how many more failed). */
export function failedRowsText(rows: FailedRow[] | undefined, failed: number): string | undefined {
  if (!rows?.length) return undefined;
  const more = failed - rows.length;
  return (
    `${rows.length < failed ? 'first failed rows' : 'failed rows'}: ` +
    rows.map((f) => `row ${f.row} ${f.code}`).join(', ') +
    (more > 0 ? ` (and ${more} more)` : '')
  );
}

/** Rows listed by number, then how many more. */
const rowList = (rows: number[], count: number) =>
  `row${count === 1 ? '' : 's'} ${rows.join(', ')}${count > rows.length ? ` (and ${count - rows.length} more)` : ''}`;

export function summaryText(s: BatchSummary): string {
  const failed = failedByCode(s);
  const failedRows = failedRowsText(s.failedRows, s.failed);
  const spend = spendText(s);
  const lines = [
    `batch ${s.batchId} ${s.state}: ${s.done} of ${s.total} rows in ${s.seconds} s (${s.rowsPerSecond} rows/s)`,
    `  found ${s.found}, empty ${s.empty}, failed ${s.failed}${failed ? ` (${failed})` : ''}`,
    ...(spend ? [`  ${spend}`] : []),
    ...(s.skipped
      ? [
          `  the credit budget stopped ${s.skipped} row${s.skipped === 1 ? '' : 's'}: pcds batch resume ${s.batchId} --max-credits <more> runs them`,
        ]
      : []),
    `  ${requestsText(s)}`,
    ...(s.blankLines
      ? [`  ${s.blankLines} blank line${s.blankLines === 1 ? '' : 's'} skipped`]
      : []),
    ...(failedRows ? [`  ${failedRows}`] : []),
  ];
  if (s.csvOutput) {
    lines.push(
      `  output: ${s.csvOutput} (CSV in row order; results streamed to ${s.output}; summary: ${summaryPathOf(s.csvOutput)})`,
    );
  } else {
    lines.push(`  output: ${s.output} (summary: ${summaryPathOf(s.output)})`);
  }
  if (s.csvError) lines.push(`  warning: ${s.csvError}`);
  if (s.csv && s.csv.withoutLine > 0) {
    const what =
      s.state === 'done' ? 'have no result line (outcome "missing" in the CSV)' : 'were not run';
    lines.push(
      `  ${s.csv.withoutLine} input rows ${what}: ${rowList(s.csv.firstWithoutLine, s.csv.withoutLine)}`,
    );
  }
  return lines.join('\n');
}

/** What an export wrote, for people. */
export function exportText(r: ExportReport, running: boolean): string[] {
  const order = r.sorted ? 'in row order' : 'in file order';
  const lines = [
    `wrote ${r.written} ${r.format === 'csv' ? 'rows' : 'lines'} of ${r.inputRows} input rows to ${r.path} (${r.format}, ${order})`,
  ];
  if (r.withoutLine > 0) {
    lines.push(
      running
        ? `${r.withoutLine} rows have no result yet (the batch is running): ${rowList(r.firstWithoutLine, r.withoutLine)}`
        : `warning: ${r.withoutLine} input rows have no result line: ${rowList(r.firstWithoutLine, r.withoutLine)}`,
    );
  }
  if (r.strayLines > 0)
    lines.push(`note: ${r.strayLines} lines of the output match no input row or repeat a row`);
  return lines;
}

/** A running batch's status when no worker answered: what it last published, and why. */
export function publishedText(p: PublishedProgress): string[] {
  const counts =
    p.done !== undefined
      ? `${p.done} rows done, ${p.failed ?? 0} failed`
      : 'no counts published yet';
  return [
    `batch ${p.batchId} ${p.state ?? 'running'}: ${counts} (last published progress: ${p.reason})`,
    ...(p.summary ? [`  ${p.summary}`] : []),
  ];
}

/** A pause and the keys out of the pool, beside the progress. */
export function poolNotes(p: BatchProgress): string[] {
  const notes: string[] = [];
  if (p.paused) notes.push(`paused: ${p.paused.code}: ${p.paused.message}`);
  const removed = p.pool.filter((k) => k.removed);
  if (removed.length > 0)
    notes.push(`keys out of the pool: ${removed.map((k) => `${k.id} (${k.removed})`).join(', ')}`);
  return notes;
}
