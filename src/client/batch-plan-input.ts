// What a batch's plan needs from its input before it starts: how many rows send nothing (they
// repeat an earlier row, or fail validation). One streamed pass, chunk by chunk; only the
// fingerprints of distinct rows stay in memory, as in the worker's duplicates pass.
import { TYPICAL_CREDITS } from '../batch/cost.js';
import { DuplicateFinder } from '../batch-io/duplicates.js';
import type { LoadResult } from '../store/load.js';
import type { PreparedBatch } from './batch-launch.js';
import {
  keyWindows,
  planBatch,
  type BatchPlan,
  type FieldCounts,
  type InputText,
  type SentLog,
} from '../batch/plan.js';
import { readRows } from '../batch-io/row-reader.js';
import { FALLBACK_ENCODING } from '../batch-io/text-encoding.js';
import { ValueNotes } from '../batch/field-counts.js';
import { isInvalidRow, type BatchInput, type InputInspection } from '../batch/types.js';

export interface InputCounts {
  rows: number;
  invalid: number;
  duplicates: number;
  /** Valid rows sent with whitespace trimmed from around a value, and how often per parameter. */
  trimmed: FieldCounts;
  /** How the input was read as text, and the valid rows sent without an unreadable value. */
  text: InputText;
  /** Rows the result cache would answer (found or empty), and the found among them. */
  cached?: number;
  cachedFound?: number;
}

/** Counts, of the rows a batch would send, those the result cache would answer. */
export type CacheHitCounter = (
  params: Record<string, unknown>[],
) => Promise<{ rows: number; found: number }>;

/** How a batch's input was read as text: its encoding, rows not UTF-8, values unreadable. */
export function inputTextOf(
  input: Pick<BatchInput, 'source'>,
  inspection: Pick<InputInspection, 'notUtf8Rows'>,
  unreadable: FieldCounts,
): InputText {
  return {
    encoding: input.source.encoding ?? 'utf-8',
    ...(inspection.notUtf8Rows
      ? { notUtf8: { rows: inspection.notUtf8Rows, readAs: FALLBACK_ENCODING } }
      : {}),
    unreadable,
  };
}

/**
 * A loaded batch's counts for its plan: the store's (rows, invalid, duplicates, cached), with
 * what the load saw of the values (trimmed, unreadable) and of the file's text.
 */
export function loadedInputCounts(
  prepared: Pick<PreparedBatch, 'input' | 'inspection'>,
  loaded: Pick<LoadResult, 'trimmed' | 'unreadable'>,
  stored: Omit<InputCounts, 'trimmed' | 'text'>,
): InputCounts {
  return {
    ...stored,
    trimmed: loaded.trimmed,
    text: inputTextOf(prepared.input, prepared.inspection, loaded.unreadable),
  };
}

export async function countPlanRows(
  input: Pick<BatchInput, 'source' | 'endpoint' | 'maxRowBytes' | 'dedupe'>,
  inspection: InputInspection,
  cacheHits?: CacheHitCounter,
): Promise<InputCounts> {
  const finder = input.dedupe === false ? undefined : new DuplicateFinder();
  const notes = new ValueNotes(input.endpoint);
  let invalid = 0;
  let cached = 0;
  let cachedFound = 0;
  let from = { row: 1, byteOffset: inspection.dataOffset, done: inspection.total === 0 };
  while (!from.done) {
    const got = await readRows({
      source: input.source,
      endpoint: input.endpoint,
      ...(inspection.header ? { header: inspection.header } : {}),
      from,
      count: 5000,
      maxBytes: 64 * 1024 * 1024,
      ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
    });
    const sent: Record<string, unknown>[] = [];
    for (const row of got.rows) {
      if (isInvalidRow(row)) invalid += 1;
      else {
        notes.note(row);
        finder?.add(row);
        if (!finder?.followers.has(row.row)) sent.push(row.params);
      }
    }
    if (cacheHits && sent.length > 0) {
      const hits = await cacheHits(sent);
      cached += hits.rows;
      cachedFound += hits.found;
    }
    from = got.next;
  }
  return {
    rows: inspection.total,
    invalid,
    duplicates: finder?.followers.size ?? 0,
    trimmed: notes.trimmed.counts,
    text: inputTextOf(input, inspection, notes.unreadable.counts),
    ...(cacheHits ? { cached, cachedFound } : {}),
  };
}

/** The keys a plan assumes: their limits, and the time scale of the windows (1: the service's). */
export interface PlanLimits {
  keys: { id: string; perMinute: number; perHour: number }[];
  timeScale?: number;
  /**
   * What each key already has in its windows, as of `nowMs` (client/key-window-use.ts reads it
   * from the keys' throttles): the plan counts it. Absent: the windows are taken as empty.
   */
  sent?: Record<string, SentLog>;
  nowMs?: number;
}

/** The plan of a prepared batch (batch/plan.ts), after one pass over its input. */
export async function planPreparedBatch(
  prepared: PreparedBatch,
  limits: PlanLimits,
  cacheHits?: CacheHitCounter,
): Promise<BatchPlan> {
  return planOfCounts(
    prepared,
    await countPlanRows(prepared.input, prepared.inspection, cacheHits),
    limits,
  );
}

/**
 * The plan of a prepared batch from counts of its rows: those of a pass over its input, or
 * those the store gives once its rows are loaded (BatchStore.planCounts).
 */
export function planOfCounts(
  prepared: PreparedBatch,
  counts: InputCounts,
  limits: PlanLimits,
): BatchPlan {
  const timeScale = limits.timeScale ?? 1;
  return planBatch({
    ...counts,
    webhooks: prepared.input.webhooks === true,
    keys: limits.keys.map((k) => keyWindows(k, timeScale)),
    creditsPerRow: TYPICAL_CREDITS[prepared.endpoint.price],
    timeScale,
    ...(limits.sent ? { sent: limits.sent, nowMs: limits.nowMs ?? Date.now() } : {}),
  });
}
