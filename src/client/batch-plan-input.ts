// What a batch's plan needs from its input before it starts: how many rows send nothing (they
// repeat an earlier row, or fail validation). One streamed pass, chunk by chunk; only the
// fingerprints of distinct rows stay in memory, as in the worker's duplicates pass.
import { TYPICAL_CREDITS } from '../batch/cost.js';
import { DuplicateFinder } from '../batch-io/duplicates.js';
import type { PreparedBatch } from './batch-launch.js';
import { endpointParameters } from '../batch/columns.js';
import {
  keyWindows,
  planBatch,
  type BatchPlan,
  type FieldCounts,
  type InputText,
  type SentLog,
} from '../batch/plan.js';
import { getEndpoint } from '../contract/index.js';
import { readRows } from '../batch-io/row-reader.js';
import { FALLBACK_ENCODING } from '../batch-io/text-encoding.js';
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

/**
 * Counts the rows that list some of their parameters (trimmed, unreadable). A parameter of the
 * endpoint is named; any other key (a loosely documented endpoint's, from the file) is "other".
 */
class FieldCounter {
  readonly counts: FieldCounts = { rows: 0, fields: {} };
  constructor(private readonly names: ReadonlySet<string>) {}
  add(fields: readonly string[] | undefined): void {
    if (!fields?.length) return;
    this.counts.rows += 1;
    for (const field of fields) {
      const name = this.names.has(field) ? field : 'other';
      this.counts.fields[name] = (this.counts.fields[name] ?? 0) + 1;
    }
  }
}

/** Counts, of the rows a batch would send, those the result cache would answer. */
export type CacheHitCounter = (
  params: Record<string, unknown>[],
) => Promise<{ rows: number; found: number }>;

export async function countPlanRows(
  input: Pick<BatchInput, 'source' | 'endpoint' | 'maxRowBytes' | 'dedupe'>,
  inspection: InputInspection,
  cacheHits?: CacheHitCounter,
): Promise<InputCounts> {
  const finder = input.dedupe === false ? undefined : new DuplicateFinder();
  const names = new Set(endpointParameters(getEndpoint(input.endpoint)).names);
  const trimmed = new FieldCounter(names);
  const unreadable = new FieldCounter(names);
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
        trimmed.add(row.trimmed);
        unreadable.add(row.unreadable);
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
    trimmed: trimmed.counts,
    text: {
      encoding: input.source.encoding ?? 'utf-8',
      ...(inspection.notUtf8Rows
        ? { notUtf8: { rows: inspection.notUtf8Rows, readAs: FALLBACK_ENCODING } }
        : {}),
      unreadable: unreadable.counts,
    },
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
  const timeScale = limits.timeScale ?? 1;
  return planBatch({
    ...(await countPlanRows(prepared.input, prepared.inspection, cacheHits)),
    webhooks: prepared.input.webhooks === true,
    keys: limits.keys.map((k) => keyWindows(k, timeScale)),
    creditsPerRow: TYPICAL_CREDITS[prepared.endpoint.price],
    timeScale,
    ...(limits.sent ? { sent: limits.sent, nowMs: limits.nowMs ?? Date.now() } : {}),
  });
}
