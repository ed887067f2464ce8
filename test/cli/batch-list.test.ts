// `pcds batch list` against the shared Temporal server's visibility: recent batches with their
// state, row counters and age; --state and --limit narrow the list. The namespace is shared with
// other tests, so only this file's batches are checked by id.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { sharedCliEnv, tempDir } from './cli-env.js';

const shared = sharedCliEnv();
const { pcds } = shared;
const runId = `${process.pid}-${Date.now().toString(36)}`;
const dir = tempDir('batch-list');

interface Listed {
  batchId: string;
  state: string;
  rowsDone?: number;
  rowsFailed?: number;
  ageSeconds: number;
  startedAt: string;
}

async function list(...args: string[]): Promise<Listed[]> {
  const r = await pcds('batch', 'list', '--json', ...args);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Listed[];
}

/** Lists until `ok` holds (visibility follows the workflows with a short delay). */
async function listUntil(args: string[], ok: (rows: Listed[]) => boolean): Promise<Listed[]> {
  for (let attempt = 0; ; attempt++) {
    const rows = await list(...args);
    if (ok(rows) || attempt >= 40) return rows;
    await new Promise((r) => setTimeout(r, 500));
  }
}

it('rule: batch list shows each batch with its state, rows done and failed, and age; --state and --limit narrow it', async () => {
  const emails = sampleRows({ rows: 30 }).map((r) => r.email);
  const small = join(dir, 'small.csv');
  writeFileSync(small, ['email', emails[0], 'not-an-email', emails[1]].join('\n') + '\n');
  const big = join(dir, 'big.csv');
  writeFileSync(big, ['email', ...emails].join('\n') + '\n');
  const doneId = `list-done-${runId}`;
  const pausedId = `list-paused-${runId}`;
  const start = (id: string, input: string, ...extra: string[]) =>
    pcds(
      'batch',
      'start',
      '--id',
      id,
      '-i',
      input,
      '-o',
      join(dir, `${id}.jsonl`),
      '--detach',
      ...extra,
    );

  const started = await start(doneId, small);
  expect(started.code, started.stderr).toBe(0);
  const paused = await start(pausedId, big, '--window', '1');
  expect(paused.code, paused.stderr).toBe(0);
  const pause = await pcds('batch', 'pause', pausedId);
  expect(pause.code, pause.stderr).toBe(0);

  const rows = await listUntil(['--limit', '200'], (rs) => {
    const done = rs.find((r) => r.batchId === doneId);
    const held = rs.find((r) => r.batchId === pausedId);
    return done?.state === 'done' && held?.state === 'paused';
  });
  const done = rows.find((r) => r.batchId === doneId);
  expect(done).toMatchObject({ state: 'done', rowsDone: 3, rowsFailed: 1 });
  expect(done!.ageSeconds).toBeGreaterThanOrEqual(0);
  expect(done!.ageSeconds).toBeLessThan(600);
  const held = rows.find((r) => r.batchId === pausedId)!;
  expect(held.state).toBe('paused');
  expect(held.rowsDone).toBeLessThan(30);
  // One row per batch: the runs a batch continued from are not listed.
  expect(rows.filter((r) => r.batchId === doneId)).toHaveLength(1);
  // Newest first.
  const at = (id: string) => rows.findIndex((r) => r.batchId === id);
  expect(at(pausedId)).toBeLessThan(at(doneId));

  const completed = await list('--state', 'completed', '--limit', '200');
  expect(completed.map((r) => r.batchId)).toContain(doneId);
  expect(completed.map((r) => r.batchId)).not.toContain(pausedId);
  const pausedOnly = await list('--state', 'paused', '--limit', '200');
  expect(pausedOnly.map((r) => r.batchId)).toContain(pausedId);
  expect(pausedOnly.map((r) => r.batchId)).not.toContain(doneId);
  expect(await list('--limit', '1')).toHaveLength(1);

  const text = await pcds('batch', 'list', '--limit', '200');
  expect(text.code, text.stderr).toBe(0);
  expect(text.stdout.split('\n')[0]).toMatch(/^BATCH +STATE +DONE +FAILED +AGE +STARTED$/);
  expect(text.stdout).toMatch(new RegExp(`^${doneId} +done +3 +1 +\\d+[smhd]`, 'm'));
  const bad = await pcds('batch', 'list', '--state', 'sleeping');
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/--state/);

  await pcds('batch', 'cancel', pausedId);
}, 180_000);
