// The idempotent writer: no row twice, a partial last line repaired, another writer noticed.
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  appendResultLines,
  forgetOutputIndexes,
  OutputUnwritableError,
  resetOutput,
} from '../../../src/batch-io/result-writer.js';

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

describe('appendResultLines across processes and failures', () => {
  it('reads only what another process appended, not the whole file again', async () => {
    const path = join(dir, 'f.jsonl');
    await appendResultLines(path, [{ row: 1 }, { row: 2 }]);
    // Bytes this process already indexed are spoiled in place (same length): a full rescan would
    // forget row 1 and write it again; reading only the appended tail keeps it.
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.replace('{"row":1}', '{"xxx":1}'));
    appendFileSync(path, JSON.stringify({ row: 3 }) + '\n');
    expect(await appendResultLines(path, [{ row: 1 }, { row: 3 }, { row: 4 }])).toEqual({
      written: 1,
      skipped: 2,
    });
    expect(readFileSync(path, 'utf8')).toBe('{"xxx":1}\n{"row":2}\n{"row":3}\n{"row":4}\n');
  });

  it('rebuilds the index when the file was replaced or shrank', async () => {
    const path = join(dir, 'g.jsonl');
    await appendResultLines(path, [{ row: 1 }, { row: 2 }]);
    writeFileSync(path, JSON.stringify({ row: 9 }) + '\n');
    expect(await appendResultLines(path, [{ row: 1 }, { row: 9 }])).toEqual({
      written: 1,
      skipped: 1,
    });
    expect(rowsIn(path)).toEqual([9, 1]);
  });

  it('reports a full disk as OutputUnwritableError (ENOSPC), keeps the lines unacknowledged', async () => {
    const path = join(dir, 'full.jsonl');
    symlinkSync('/dev/full', path);
    const err = await appendResultLines(path, [{ row: 1 }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OutputUnwritableError);
    expect((err as OutputUnwritableError).errno).toBe('ENOSPC');
    expect((err as Error).message).toContain('no space left');
    // Once the disk has room again, the same rows are written, once.
    unlinkSync(path);
    expect(await appendResultLines(path, [{ row: 1 }])).toEqual({ written: 1, skipped: 0 });
    expect(rowsIn(path)).toEqual([1]);
  });

  it('two processes appending the same rows at once write each row exactly once, whole', async () => {
    const path = join(dir, 'h.jsonl');
    const script = join(dir, 'append-child.mts');
    writeFileSync(
      script,
      `import { appendResultLines } from ${JSON.stringify(join(process.cwd(), 'src/batch-io/result-writer.ts'))};
const [path, from] = process.argv.slice(2);
const start = Number(from);
for (let i = 0; i < 40; i++) {
  // Each child writes rows both own and shared with the other child, in batches of 5.
  const rows = Array.from({ length: 5 }, (_, k) => ({ row: (start + i * 5 + k) % 300, pad: 'x'.repeat(2000) }));
  await appendResultLines(path, rows);
}
`,
    );
    const child = (from: number) =>
      new Promise<void>((resolve, reject) => {
        const p = spawn(process.execPath, ['--import', 'tsx', script, path, String(from)], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let err = '';
        p.stderr.on('data', (d: Buffer) => (err += d.toString()));
        p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(err))));
      });
    await Promise.all([child(0), child(100)]);
    const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    const rows = lines.map((l) => (JSON.parse(l) as { row: number }).row);
    expect(new Set(rows).size).toBe(rows.length);
    expect(rows.length).toBe(
      new Set([...Array(200).keys(), ...Array.from({ length: 200 }, (_, i) => (100 + i) % 300)])
        .size,
    );
  }, 60_000);
});
