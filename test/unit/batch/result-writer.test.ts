// The idempotent writer: no row twice, a partial last line repaired, another writer noticed.
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  appendResultLines,
  forgetOutputIndexes,
  resetOutput,
} from '../../../src/batch/result-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'pcds-writer-'));
const rowsIn = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { row: number }).row);

describe('appendResultLines', () => {
  it('skips rows already in the file, also within one call', async () => {
    const path = join(dir, 'a', 'out.jsonl');
    await resetOutput(path);
    expect(await appendResultLines(path, [{ row: 1 }, { row: 2 }, { row: 2 }])).toEqual({
      written: 2,
      skipped: 1,
    });
    expect(await appendResultLines(path, [{ row: 2 }, { row: 3 }])).toEqual({
      written: 1,
      skipped: 1,
    });
    expect(rowsIn(path)).toEqual([1, 2, 3]);
  });

  it('rebuilds its index from the file after a restart (cache lost)', async () => {
    const path = join(dir, 'b.jsonl');
    await appendResultLines(path, [{ row: 5 }, { row: 6 }]);
    forgetOutputIndexes();
    expect(await appendResultLines(path, [{ row: 6 }, { row: 7 }])).toEqual({
      written: 1,
      skipped: 1,
    });
    expect(rowsIn(path)).toEqual([5, 6, 7]);
  });

  it('notices a file grown by another writer', async () => {
    const path = join(dir, 'c.jsonl');
    await appendResultLines(path, [{ row: 1 }]);
    appendFileSync(path, JSON.stringify({ row: 2 }) + '\n');
    expect(await appendResultLines(path, [{ row: 2 }, { row: 3 }])).toEqual({
      written: 1,
      skipped: 1,
    });
    expect(rowsIn(path)).toEqual([1, 2, 3]);
  });

  it('cuts a partial last line left by a crash, and writes that row again', async () => {
    const path = join(dir, 'd.jsonl');
    writeFileSync(path, JSON.stringify({ row: 1 }) + '\n' + '{"row":2,"outcome":"fou');
    forgetOutputIndexes();
    expect(await appendResultLines(path, [{ row: 1 }, { row: 2 }])).toEqual({
      written: 1,
      skipped: 1,
    });
    const text = readFileSync(path, 'utf8');
    expect(text).toBe('{"row":1}\n{"row":2}\n');
  });

  it('keeps concurrent appends to one file whole and distinct', async () => {
    const path = join(dir, 'e.jsonl');
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        appendResultLines(path, [{ row: i % 10 }, { row: 100 + i }]),
      ),
    );
    const rows = rowsIn(path);
    expect(rows.length).toBe(30);
    expect(new Set(rows).size).toBe(30);
  });
});
