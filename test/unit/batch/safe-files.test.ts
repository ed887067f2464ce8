// Files the project writes are safe to open and private: CSV cells a spreadsheet would run as
// formulas are neutralised (OWASP), unless raw cells are asked for, and results, summaries and
// exports are 0600 in folders made 0700.
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSearchExportActivities } from '../../../src/activities/search-export.js';
import type { ActivityDeps } from '../../../src/activities/deps.js';
import { exportBatchOutput } from '../../../src/batch-io/export.js';
import { BatchSetupError, prepareBatch } from '../../../src/client/batch-launch.js';
import { spreadsheetSafeCsv } from '../../../src/batch/spreadsheet-safe.js';
import { appendResultLines, resetOutput } from '../../../src/batch-io/result-writer.js';
import type { ResultLine } from '../../../src/batch/types.js';
import { writeFileAtomic } from '../../../src/files/atomic-write.js';
import {
  couldRunAsFormula,
  FORMULA_PAYLOADS,
  PLAIN_CELLS,
  RESULT_ONLY_PAYLOADS,
} from './formula-payloads.js';

const PAYLOADS = FORMULA_PAYLOADS;
const PLAIN = PLAIN_CELLS;

const dir = mkdtempSync(join(tmpdir(), 'pcds-safe-files-'));
const modeOf = (path: string) => statSync(path).mode & 0o777;
const readCsv = (path: string): string[][] => parse(readFileSync(path, 'utf8'));
let n = 0;
const fresh = (name: string) => join(dir, `${++n}-${name}`);

// A known umask, so "0600" is what the code asked for and not an accident of the environment.
let umaskBefore: number;
beforeAll(() => {
  umaskBefore = process.umask(0o022);
});
afterAll(() => {
  process.umask(umaskBefore);
});

/** Cells written with the project's CSV options, then read back as a CSV reader sees them. */
const roundTrip = (cells: string[]): string[] => {
  const records: string[][] = parse(stringify([cells], spreadsheetSafeCsv()));
  return records[0];
};

describe('spreadsheet-safe CSV cells (csv-stringify escape_formulas and what it misses)', () => {
  it.each([...PAYLOADS, ...RESULT_ONLY_PAYLOADS])(
    '%j is read back as text a spreadsheet shows',
    (cell, shown) => {
      const [back] = roundTrip([cell]);
      expect(back).toBe(shown);
      expect(couldRunAsFormula(back)).toBe(false);
    },
  );
  it.each(PLAIN)('%j is read back as it is', (cell) => {
    expect(roundTrip([cell])).toEqual([cell]);
  });
  it('the payloads themselves would run (the check above is not vacuous)', () => {
    for (const [cell] of [...PAYLOADS, ...RESULT_ONLY_PAYLOADS])
      expect(couldRunAsFormula(cell), JSON.stringify(cell)).toBe(true);
    for (const cell of PLAIN) expect(couldRunAsFormula(cell), JSON.stringify(cell)).toBe(false);
  });
});

/** A CSV input whose `note` column holds every payload, and lines whose results hold them too. */
function payloadBatch(): { input: string; lines: string } {
  const cells = [...PAYLOADS.map(([p]) => p), PLAIN[0]];
  const quoted = (v: string) => `"${v.replace(/"/g, '""')}"`;
  const input = fresh('in.csv');
  writeFileSync(
    input,
    ['email,=note', ...cells.map((c, i) => `r${i}@example.com,${quoted(c)}`)].join('\n') + '\n',
  );
  const lines = fresh('out.jsonl');
  writeFileSync(
    lines,
    cells
      .map((c, i): ResultLine => {
        const row = i + 1;
        return { row, key: {}, outcome: 'found', result: { title: c, score: -row } };
      })
      .map((l) => JSON.stringify(l) + '\n')
      .join(''),
  );
  return { input, lines };
}

describe('exportBatchOutput to CSV', () => {
  it('neutralises every cell that starts like a formula: input, result and header', async () => {
    const { input, lines } = payloadBatch();
    const target = join(fresh('exports'), 'deeper', 'safe.csv');
    await exportBatchOutput({
      source: { path: input, format: 'csv' },
      lines,
      target,
      format: 'csv',
      noLine: 'missing',
    });
    const [header, ...rows] = readCsv(target);
    expect(header).toEqual(['email', "'=note", 'outcome', 'code', 'message', 'title', 'score']);
    const expected = [...PAYLOADS.map(([, shown]) => shown), PLAIN[0]];
    expect(rows.map((r) => r[1])).toEqual(expected);
    expect(rows.map((r) => r[header.indexOf('title')])).toEqual(expected);
    // A number of the result that reads negative is neutralised too.
    expect(rows.map((r) => r[header.indexOf('score')])).toEqual(rows.map((_, i) => `'-${i + 1}`));
    expect(rows.flat().filter(couldRunAsFormula)).toEqual([]);
    // The export and the folders it made are its owner's only.
    expect(modeOf(target)).toBe(0o600);
    expect(modeOf(join(target, '..'))).toBe(0o700);
    expect(modeOf(join(target, '..', '..'))).toBe(0o700);
  });

  it('with rawCells keeps every cell exactly as it is', async () => {
    const { input, lines } = payloadBatch();
    const target = fresh('raw.csv');
    await exportBatchOutput({
      source: { path: input, format: 'csv' },
      lines,
      target,
      format: 'csv',
      noLine: 'missing',
      rawCells: true,
    });
    const [header, ...rows] = readCsv(target);
    expect(header.slice(0, 2)).toEqual(['email', '=note']);
    const given = [...PAYLOADS.map(([p]) => p), PLAIN[0]];
    expect(rows.map((r) => r[1])).toEqual(given);
    expect(rows.map((r) => r[header.indexOf('title')])).toEqual(given);
    expect(modeOf(target)).toBe(0o600);
  });

  it('a JSONL export is 0600 and its lines are the values as they are', async () => {
    const { input, lines } = payloadBatch();
    for (const sorted of [true, false]) {
      const target = fresh('copy.jsonl');
      await exportBatchOutput({
        source: { path: input, format: 'csv' },
        lines,
        target,
        format: 'jsonl',
        sorted,
        noLine: 'missing',
      });
      expect(readFileSync(target, 'utf8')).toBe(readFileSync(lines, 'utf8'));
      expect(modeOf(target)).toBe(0o600);
    }
  });

  it('replacing a wider file leaves a 0600 one', async () => {
    const { input, lines } = payloadBatch();
    const target = fresh('wide.csv');
    writeFileSync(target, 'old\n');
    chmodSync(target, 0o644);
    await exportBatchOutput({
      source: { path: input, format: 'csv' },
      lines,
      target,
      format: 'csv',
      noLine: 'missing',
    });
    expect(modeOf(target)).toBe(0o600);
  });
});

/** A search export's file activities (they need no dependency but the type's). */
const exportActivities = () => createSearchExportActivities({} as ActivityDeps);

describe('modes of the files a batch or an export writes', () => {
  const line = (row: number): ResultLine => ({ row, key: {}, outcome: 'empty' });

  it('the output is 0600 in new 0700 folders, also after a reset', async () => {
    const folder = fresh('out');
    const path = join(folder, 'batch', 'results.jsonl');
    await appendResultLines(path, [line(1), line(2)]);
    expect(modeOf(path)).toBe(0o600);
    expect(modeOf(join(folder, 'batch'))).toBe(0o700);
    expect(modeOf(folder)).toBe(0o700);

    const searched = join(fresh('search'), 'export.jsonl');
    await resetOutput(searched);
    expect(modeOf(searched)).toBe(0o600);
    expect(modeOf(join(searched, '..'))).toBe(0o700);
  });

  it('an existing wider file is made 0600 when appended to, and a folder that exists keeps its own', async () => {
    const folder = fresh('existing');
    const path = join(folder, 'mine.jsonl');
    await appendResultLines(join(folder, 'first.jsonl'), [line(1)]);
    chmodSync(folder, 0o750);
    writeFileSync(path, '');
    chmodSync(path, 0o640);
    await appendResultLines(path, [line(1)]);
    expect(modeOf(path)).toBe(0o600);
    expect(modeOf(folder)).toBe(0o750);
  });

  it('an existing 0644 output given with overwrite ends 0600, wherever it is started afresh', async () => {
    const wide = (name: string) => {
      const path = fresh(name);
      writeFileSync(path, '{"row":1}\n');
      chmodSync(path, 0o644);
      return path;
    };
    const input = fresh('in.csv');
    writeFileSync(input, 'email\nann@example.com\n');
    const launched = wide('launched.jsonl');
    await prepareBatch({ input, output: launched, overwrite: true });
    expect(readFileSync(launched, 'utf8')).toBe('');
    expect(modeOf(launched)).toBe(0o600);

    // A search export starts its output afresh through this activity.
    const exported = wide('export.jsonl');
    await exportActivities().resetBatchOutput({ path: exported });
    expect(readFileSync(exported, 'utf8')).toBe('');
    expect(modeOf(exported)).toBe(0o600);
  });

  it("a search export's summary and a file written atomically are 0600", async () => {
    const summary = await exportActivities().writeBatchSummary({
      path: join(fresh('summary'), 'out.jsonl'),
      summary: { state: 'done' },
    });
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toEqual({ state: 'done' });
    expect(modeOf(summary)).toBe(0o600);
    expect(modeOf(join(summary, '..'))).toBe(0o700);

    const atomic = fresh('atomic.json');
    await writeFileAtomic(atomic, '{}');
    expect(modeOf(atomic)).toBe(0o600);
  });
});

describe('csvRawCells in a batch request', () => {
  const input = fresh('leads.csv');
  writeFileSync(input, 'email\nann@example.com\n');

  it('reaches the batch with a .csv output, and is off unless asked', async () => {
    const raw = await prepareBatch({ input, output: fresh('raw.csv'), csvRawCells: true });
    expect(raw.input.csvRawCells).toBe(true);
    const safe = await prepareBatch({ input, output: fresh('safe.csv') });
    expect(safe.input.csvRawCells).toBeUndefined();
  });

  it('is refused with a JSONL output, which holds the values as they are', async () => {
    const err = await prepareBatch({ input, output: fresh('out.jsonl'), csvRawCells: true }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BatchSetupError);
    expect(err).toMatchObject({ code: 'invalid_options' });
    expect((err as Error).message).toContain('--csv-raw-cells is for a .csv --output');
  });
});
