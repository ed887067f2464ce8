// Queries and signals of the batch workflow, defined once so the CLI, the client and the
// workflow agree. Signals (not updates) so operators can send them from the Web UI too.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RowEnd } from './rules.js';
import type { BatchProgress } from './types.js';

export const batchProgressQuery = defineQuery<BatchProgress>('batchProgress');
/** Stop starting rows; rows in flight finish and are written. */
export const pauseBatchSignal = defineSignal<[{ reason?: string }?]>('pauseBatch');
/**
 * Start rows again, after re-reading the worker's keys (and closing their credit breakers after
 * a pause for credits). `maxCredits` raises the batch's credit budget.
 */
export const resumeBatchSignal = defineSignal<[{ maxCredits?: number }?]>('resumeBatch');
/** A new window width (1..1000). */
export const setBatchWindowSignal = defineSignal<[number]>('setBatchWindow');

/** A row's call reports how it ended to the batch's workflow id (after a continue-as-new). */
export const rowFinishedSignal = defineSignal<[{ row: number } & RowEnd]>('rowFinished');
