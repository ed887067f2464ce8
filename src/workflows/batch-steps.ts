// The steps of a batch that are activities: the first run's look at the input and its output,
// reading rows, appending lines, the CSV and the summary. The batch workflow sequences them.
import { ActivityFailure, ApplicationFailure, isCancellation, patched } from '@temporalio/workflow';
import { TYPICAL_CREDITS } from '../batch/cost.js';
import { newKeyPool } from '../batch/key-pool.js';
import { clampWindow } from '../batch/rules.js';
import { isScopedId } from '../temporal/workflow-ids.js';
import {
  DEFAULT_CHUNK_BYTES,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_WINDOW,
  duplicatesIndexPath,
  expectedStoreOf,
  type BatchInput,
  type BatchSummary,
  type CarriedState,
  type ExportReport,
  type InputFiles,
  type InputRow,
  type ReadCursor,
  type ResultLine,
} from '../batch/types.js';
import { findEndpoint, type EndpointDef } from '../contract/index.js';
import { accounts, exporting, files, firstPass } from './batch-activities.js';

/** The batch's endpoint, once its input is checked: a bad input fails the batch for good. */
export function checkBatchInput(input: BatchInput): EndpointDef {
  if (!isScopedId(input.batchId)) {
    throw ApplicationFailure.create({
      type: 'invalid_batch_id',
      message: "batch id: 1 to 64 letters, digits, _ or -, after its tenant's id and a dot",
      nonRetryable: true,
    });
  }
  const endpoint = findEndpoint(input.endpoint);
  if (!endpoint || endpoint.polling === 'sync') {
    throw ApplicationFailure.create({
      type: 'unknown_endpoint',
      message: `no asynchronous endpoint named ${input.endpoint}`,
      nonRetryable: true,
    });
  }
  return endpoint;
}

/** The worker's keys (those the batch names, if it does). */
export const keyPoolOf = (input: BatchInput) =>
  accounts.batchKeyPool({ ...(input.keyIds ? { keyIds: input.keyIds } : {}) });

/** The input's rows, header and blank lines; a stored batch's, from the store. */
function inspectInput(input: BatchInput, endpoint: EndpointDef) {
  // A stored batch's rows were loaded by its launcher: the store says how many there are.
  return input.store
    ? files
        .storedBatchInput({ batchId: input.batchId, ...expectedStoreOf(input) })
        .then((stored) => ({
          ...stored,
          dataOffset: 0,
          header: undefined,
        }))
    : firstPass.inspectBatchInput({
        source: input.source,
        endpoint: endpoint.name,
        ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
      });
}

/** The output created, or reopened (a run again with a higher budget) with what it holds. */
async function openOutput(input: BatchInput, endpoint: EndpointDef) {
  if (input.reopen && input.store) {
    return exporting.reopenStoredResults({
      batchId: input.batchId,
      perRow: TYPICAL_CREDITS[endpoint.price],
      ...expectedStoreOf(input),
    });
  } else if (input.reopen) {
    // Run again with a higher budget: the rows skipped for the budget lose their lines.
    return exporting.reopenBatchOutput({
      path: input.output,
      perRow: TYPICAL_CREDITS[endpoint.price],
    });
  } else if (input.store) {
    // Nothing to create: the store keeps one result per row of the batch.
  } else if (patched('batch-output-never-truncated')) {
    // Versioned (see docs/upgrading.md): batches started by 0.1.0 truncated here.
    await files.createBatchOutput({ path: input.output });
  } else await files.resetBatchOutput({ path: input.output });
  return undefined;
}

/**
 * The first run's state: the input looked at (rows, header, blank lines), the keys, the output
 * created or reopened, duplicates found.
 */
export async function firstRunState(
  input: BatchInput,
  endpoint: EndpointDef,
): Promise<CarriedState> {
  const [inspection, keys] = await Promise.all([inspectInput(input, endpoint), keyPoolOf(input)]);
  if (keys.length === 0) {
    throw ApplicationFailure.create({
      type: 'no_keys',
      message: 'the worker has no API key configured',
      nonRetryable: true,
    });
  }
  const reopened = await openOutput(input, endpoint);
  const s: CarriedState = {
    cursor: { row: 1, byteOffset: inspection.dataOffset, done: false },
    ...(inspection.header ? { header: inspection.header } : {}),
    total: inspection.total,
    counters: { done: 0, found: 0, empty: 0, failed: 0, failedByCode: {} },
    redo: [],
    window: clampWindow(input.window ?? DEFAULT_WINDOW),
    pool: newKeyPool(keys),
    startedAt: new Date().toISOString(),
    runs: 0,
    rate: [],
    historyEvents: 0,
    blankLines: inspection.blankLines,
    ...(reopened
      ? { counters: reopened.counters, failedRows: reopened.failedRows, skipWritten: true }
      : {}),
  };
  if (input.store) {
    // The store marked the duplicates when the rows were loaded.
    if (input.dedupe !== false) {
      s.dedupe = true;
      s.duplicatesTotal = (inspection as { duplicates?: number }).duplicates ?? 0;
    }
  } else if (
    // Versioned: batches started before duplicates were found sent every row.
    input.dedupe !== false &&
    inspection.total > 1 &&
    patched('batch-deduplicates-rows')
  ) {
    const found = await firstPass.indexDuplicateRows({
      source: input.source,
      endpoint: endpoint.name,
      ...(inspection.header ? { header: inspection.header } : {}),
      from: s.cursor,
      index: duplicatesIndexPath(input.output, input.batchId),
      ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
    });
    s.dedupe = true;
    // For the ETA: these rows send nothing.
    s.duplicatesTotal = found.duplicates;
  }
  return s;
}

/** The next chunk of rows from the cursor, from the input file or the store. */
export function readRows(
  input: BatchInput,
  endpoint: string,
  s: CarriedState,
): Promise<{ rows: InputRow[]; next: ReadCursor }> {
  const chunkSize = Math.max(1, Math.floor(input.chunkSize ?? DEFAULT_CHUNK_SIZE));
  return input.store
    ? files.readStoredRows({
        batchId: input.batchId,
        from: s.cursor,
        count: chunkSize,
        maxBytes: DEFAULT_CHUNK_BYTES,
        dedupe: s.dedupe === true,
        ...(s.skipWritten ? { skipWritten: true } : {}),
        ...expectedStoreOf(input),
      })
    : files.readBatchRows({
        source: input.source,
        endpoint,
        ...(s.header ? { header: s.header } : {}),
        from: s.cursor,
        count: chunkSize,
        maxBytes: DEFAULT_CHUNK_BYTES,
        ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
        ...(s.dedupe ? { duplicates: duplicatesIndexPath(input.output, input.batchId) } : {}),
        ...(s.skipWritten ? { skipWritten: input.output } : {}),
      });
}

/** One append of lines to the output, or (a stored batch) to the store. */
export function writeLines(input: BatchInput, lines: ResultLine[]): Promise<unknown> {
  return input.store
    ? files.writeStoredResults({ batchId: input.batchId, lines, ...expectedStoreOf(input) })
    : files.appendBatchResults({ path: input.output, lines });
}

/** The application failure `err` carries (itself, or as an activity's cause), if any. */
export function applicationFailureOf(err: unknown): ApplicationFailure | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? cause : undefined;
}

/** With a CSV output: the CSV in row order, from the JSONL. A failure is told, not fatal. */
export async function writeCsv(
  input: BatchInput,
  source: InputFiles,
  final: 'done' | 'cancelled',
): Promise<{ csv?: ExportReport; csvError?: string }> {
  // A stored batch's CSV is written where its caller runs, from the store.
  if (!input.csvOutput || input.store) return {};
  try {
    const csv = await exporting.exportBatchCsv({
      source,
      lines: input.output,
      target: input.csvOutput,
      ...(input.csvRawCells ? { rawCells: true } : {}),
      // Rows not run at the end of a done batch should not exist: they are flagged as missing.
      noLine: final === 'done' ? 'missing' : 'not_run',
    });
    return { csv };
  } catch (err) {
    if (isCancellation(err)) throw err;
    const why = applicationFailureOf(err)?.message ?? 'unknown error';
    return { csvError: `the CSV could not be written: ${why}` };
  }
}

/** The summary beside the output (the CSV when there is one), or with the stored batch's record. */
export async function saveSummary(input: BatchInput, summary: BatchSummary): Promise<void> {
  if (input.store)
    await files.saveStoredSummary({ batchId: input.batchId, summary, ...expectedStoreOf(input) });
  else await files.writeBatchSummary({ path: input.csvOutput ?? input.output, summary });
}
