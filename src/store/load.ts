// Loads a batch's input file into the store where the caller runs (interim: chunked reads).
import { inspectInput, readRows } from '../batch/row-reader.js';
import type { InputSource } from '../batch/types.js';
import type { BatchRecord, BatchStore } from './batch-store.js';

export interface LoadProgress {
  rows: number;
  bytes: number;
  totalBytes: number;
}

export async function loadFileIntoStore(
  store: BatchStore,
  opts: {
    batchId: string;
    endpoint: string;
    source: InputSource;
    maxRowBytes?: number;
    dedupe: boolean;
    onProgress?: (p: LoadProgress) => void;
  },
): Promise<{ record: BatchRecord }> {
  const inspection = await inspectInput(opts.source, opts.endpoint, opts.maxRowBytes);
  await store.beginLoad(opts.batchId, opts.endpoint, inspection.header);
  let from = { row: 1, byteOffset: inspection.dataOffset, done: inspection.total === 0 };
  while (!from.done) {
    const got = await readRows({
      source: opts.source,
      endpoint: opts.endpoint,
      ...(inspection.header ? { header: inspection.header } : {}),
      from,
      count: 1000,
      maxBytes: 16 * 1024 * 1024,
      ...(opts.maxRowBytes ? { maxRowBytes: opts.maxRowBytes } : {}),
    });
    await store.addRows(
      opts.batchId,
      opts.endpoint,
      got.rows.map((r) =>
        'problem' in r
          ? { row: r.row, problem: r.problem, key: r.key, ...(r.code ? { code: r.code } : {}) }
          : { row: r.row, params: r.params, key: r.key },
      ),
    );
    from = got.next;
    opts.onProgress?.({ rows: from.row - 1, bytes: from.byteOffset, totalBytes: 0 });
  }
  const record = await store.finishLoad(opts.batchId, {
    blankLines: inspection.blankLines,
    dedupe: opts.dedupe,
  });
  return { record };
}
