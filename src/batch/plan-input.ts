// What a batch's plan needs from its input before it starts: how many rows send nothing (they
// repeat an earlier row, or fail validation). One streamed pass, chunk by chunk; only the
// fingerprints of distinct rows stay in memory, as in the worker's duplicates pass.
import { DuplicateFinder } from './duplicates.js';
import { readRows } from './row-reader.js';
import { isInvalidRow, type BatchInput, type InputInspection } from './types.js';

export interface InputCounts {
  rows: number;
  invalid: number;
  duplicates: number;
}

export async function countPlanRows(
  input: Pick<BatchInput, 'source' | 'endpoint' | 'maxRowBytes' | 'dedupe'>,
  inspection: InputInspection,
): Promise<InputCounts> {
  const finder = input.dedupe === false ? undefined : new DuplicateFinder();
  let invalid = 0;
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
    for (const row of got.rows) {
      if (isInvalidRow(row)) invalid += 1;
      else finder?.add(row);
    }
    from = got.next;
  }
  return { rows: inspection.total, invalid, duplicates: finder?.followers.size ?? 0 };
}
