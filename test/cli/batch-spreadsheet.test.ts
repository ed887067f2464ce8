// A CRM export as a spreadsheet on Windows writes it, run with the built `pcds` against the
// emulator: emails with spaces around them, names in Windows-1252. The plan says what it trimmed
// and which rows were not UTF-8; every row is found by its email, none fails as invalid_row. The
// emulator judges values as sent (it refuses an email with spaces around it), so a found row
// shows the value went out trimmed.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { sharedCliEnv, STACK_FRAME, tempDir } from './cli-env.js';

const shared = sharedCliEnv();
const { pcds, outputs } = shared;
const dir = tempDir('spreadsheet');
const runId = `${process.pid}-${Date.now().toString(36)}`;

const [a, b, c, d] = sampleRows({ rows: 4 }).map((r) => r.email);
/** Windows-1252 bytes of a text (its characters all below U+0100). */
const cp1252 = (text: string) => Buffer.from(text, 'latin1');
const export_ = Buffer.concat([
  cp1252('email,name\r\n'),
  cp1252(`  ${a} ,Ann Lee\r\n`),
  cp1252(`${b},René Dupont\r\n`),
  cp1252(`\t${c},Zoë Ørsted \r\n`),
  cp1252(`${d},Bo\r\n`),
  cp1252('nobody.spreadsheet@unknown.pcds.dev,Nob\r\n'),
]);
const input = join(dir, 'crm-export.csv');
writeFileSync(input, export_);

it('--dry-run counts the trimmed rows and the rows not UTF-8; an unknown --encoding is refused', async () => {
  /** The plan of the export, to an output of its own, with the flags given. */
  const dryRun = (output: string, ...flags: string[]) =>
    pcds('batch', 'start', '-i', input, '-o', join(dir, output), '--dry-run', ...flags);
  const [plan, named, unknown] = await Promise.all([
    dryRun('plan.jsonl'),
    dryRun('plan2.jsonl', '--encoding', 'windows-1252'),
    dryRun('plan3.jsonl', '--encoding', 'klingon'),
  ]);
  expect(plan.code, plan.stderr).toBe(0);
  expect(plan.stdout).toMatch(/^plan: 5 rows, 5 sent x ~2 requests/m);
  expect(plan.stdout).toContain(
    '  trimmed: 2 rows had spaces around a value (email 2, name 1): sent without them\n',
  );
  expect(plan.stdout).toMatch(/^ {2}encoding: 2 rows not UTF-8, read as windows-1252 /m);
  expect(named.code, named.stderr).toBe(0);
  expect(named.stdout).toContain('  encoding: windows-1252 (--encoding)\n');
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toMatch(/^error: --encoding: "klingon" is not an encoding/);
});

it(
  'every row is found by its email, keyed by the trimmed email and the name as written',
  { timeout: 150_000 },
  async () => {
    const output = join(dir, 'crm-export.jsonl');
    // The file's store is its own: its result cache starts empty, so every row is sent.
    const r = await pcds(
      'batch',
      'start',
      '--id',
      `spreadsheet-${runId}`,
      '-i',
      input,
      '-o',
      output,
    );
    expect(r.code, r.stderr).toBe(0);
    // The progress bar's last line says how the batch ended, with no ETA left on it.
    const bar = r.stderr.split('\n').filter((l) => / rows \| found \d+ empty /.test(l));
    expect(bar.at(-1)).toMatch(/\| done in \d+s/);
    expect(bar.at(-1)).not.toContain('ETA');
    const lines = readFileSync(output, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { row: number; key: Record<string, string>; outcome: string })
      .sort((x, y) => x.row - y.row);
    expect(lines.map((l) => [l.row, l.outcome])).toEqual([
      [1, 'found'],
      [2, 'found'],
      [3, 'found'],
      [4, 'found'],
      [5, 'empty'],
    ]);
    expect(lines.map((l) => l.key)).toEqual([
      { email: a, name: 'Ann Lee' },
      { email: b, name: 'René Dupont' },
      { email: c, name: 'Zoë Ørsted' },
      { email: d, name: 'Bo' },
      { email: 'nobody.spreadsheet@unknown.pcds.dev', name: 'Nob' },
    ]);
  },
);

it('run again, the result cache answers every row, and the summary says so rather than that nothing was measured', async () => {
  const r = await pcds('batch', 'start', '-i', input, '-o', join(dir, 'again.jsonl'));
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toContain(
    '  requests per row: none measured (the result cache answered 5 rows: they send none);',
  );
  expect(r.stderr).not.toContain('none measured yet');
});

it('no output of this file shows a stack', () => {
  for (const o of outputs) expect(o.stderr).not.toMatch(STACK_FRAME);
});
