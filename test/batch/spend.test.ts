// What a batch spends: rows that repeat an earlier row (once normalised) share its call and get a
// copy of its line, and a credit budget stops the batch from starting rows it may not pay for.
// Counted by the emulator: the jobs it accepted and the credits it charged.
import { describe, expect, it, vi } from 'vitest';
import { resumeBatch } from '../../src/client/batch-launch.js';
import { sampleRows } from '../../src/emulator/index.js';
import { PcdsRowsDone, PcdsRowsFailed } from '../../src/temporal/search-attributes.js';
import { withWorker } from '../harness/temporal.js';
import { readOutput, sharedBatchEnv, startCsvBatch, tempDir, writeCsv } from './fixtures.js';

const env = sharedBatchEnv({ latency: { queuedMs: 50, processingMs: 200 } });
const dir = tempDir('spend');

const rowsOf = (n: number, unknownShare = 0.25) =>
  sampleRows({ rows: n, unknownShare }) as unknown as Record<string, string>[];

/** The same people again, spelled as people type them: in capitals. */
function respelled(rows: Record<string, string>[]): Record<string, string>[] {
  return rows.map((r) => ({ ...r, email: r.email.toUpperCase() }));
}

describe('duplicate rows', () => {
  for (const compact of [false, true]) {
    it(`share one call and each get a line marked duplicateOf (${compact ? 'compact' : 'rows as workflows'})`, async () => {
      const distinct = rowsOf(12);
      // Rows 13-18 repeat rows 1-6, row 19 repeats row 13 (so row 1 again).
      const rows = [...distinct, ...respelled(distinct.slice(0, 6)), distinct[0]];
      const input = writeCsv(dir, `dupes-${compact}.csv`, rows, ['email']);
      await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
        const before = env.emu.stats();
        const { handle, output } = await startCsvBatch(client, taskQueue, 'dupes', input, {
          window: 4,
          pollIntervalMs: 50,
          ...(compact ? { compact: true } : {}),
        });
        const summary = await handle.result();
        const after = env.emu.stats();
        expect(summary).toMatchObject({ state: 'done', done: 19, duplicates: 7, failed: 0 });
        expect(after.jobsSubmitted - before.jobsSubmitted).toBe(12);
        const lines = await readOutput(output);
        expect(lines).toHaveLength(19);
        expect(new Set(lines.map((l) => l.row)).size).toBe(19);
        const byRow = new Map(lines.map((l) => [l.row, l]));
        for (let i = 13; i <= 19; i++) {
          const leader = i === 19 ? 1 : i - 12;
          const line = byRow.get(i)!;
          expect(line.duplicateOf).toBe(leader);
          const { row: _r, key, duplicateOf: _d, message, ...shared } = line;
          const {
            row: _lr,
            key: _lk,
            message: leaderMessage,
            ...leaderShared
          } = byRow.get(leader)!;
          expect(shared).toEqual(leaderShared);
          expect(message).toBe(
            leaderMessage ?? `shares the call of row ${leader} (same parameters)`,
          );
          // The row keeps its own key (its own spelling), not the leader's.
          expect((key as { email: string }).email).toBe(rows[i - 1].email);
        }
        // Found rows are charged once: duplicates of found rows cost nothing more.
        const foundSent = lines.filter((l) => l.outcome === 'found' && !l.duplicateOf).length;
        expect(after.creditsCharged - before.creditsCharged).toBe(foundSent);
        expect(summary.found).toBe(lines.filter((l) => l.outcome === 'found').length);
        // The list view's progress columns hold the final counts.
        const described = await handle.describe();
        expect(described.typedSearchAttributes.get(PcdsRowsDone)).toBe(19);
        expect(described.typedSearchAttributes.get(PcdsRowsFailed)).toBe(0);
        // Visibility follows shortly after: the list view's filter finds the batch.
        await vi.waitFor(
          async () => {
            const listed = await client.workflow.count(
              `WorkflowId = '${handle.workflowId}' AND PcdsRowsDone >= 19 AND PcdsRowsFailed = 0`,
            );
            expect(listed.count).toBe(1);
          },
          { timeout: 20_000, interval: 500 },
        );
      });
    }, 120_000);
  }

  it('--no-dedupe (dedupe: false) sends every row', async () => {
    const distinct = rowsOf(6);
    const input = writeCsv(dir, 'no-dedupe.csv', [...distinct, ...distinct], ['email']);
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const before = env.emu.stats().jobsSubmitted;
      const { handle, output } = await startCsvBatch(client, taskQueue, 'nodedupe', input, {
        window: 4,
        pollIntervalMs: 50,
        dedupe: false,
      });
      const summary = await handle.result();
      expect(summary.done).toBe(12);
      expect(summary.duplicates ?? 0).toBe(0);
      expect(env.emu.stats().jobsSubmitted - before).toBe(12);
      expect((await readOutput(output)).some((l) => l.duplicateOf !== undefined)).toBe(false);
    });
  }, 120_000);
});

describe('credit budget', () => {
  it('never starts a row that could take the credits past the budget; the rest are skipped', async () => {
    // Every row is a known person (found, 1 credit each), so the budget is the limit.
    const rows = rowsOf(10, 0);
    const input = writeCsv(dir, 'budget.csv', rows, ['email']);
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const before = env.emu.stats();
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'budget', input, {
        window: 3,
        pollIntervalMs: 50,
        maxCredits: 4,
      });
      const summary = await handle.result();
      const after = env.emu.stats();
      expect(after.creditsCharged - before.creditsCharged).toBeLessThanOrEqual(4);
      expect(summary).toMatchObject({ state: 'done', done: 10, maxCredits: 4, credits: 4 });
      expect(summary.found).toBe(4);
      expect(summary.skipped).toBe(6);
      expect(after.jobsSubmitted - before.jobsSubmitted).toBe(4);
      const lines = await readOutput(output);
      expect(lines).toHaveLength(10);
      const skipped = lines.filter((l) => l.outcome === 'skipped');
      expect(skipped).toHaveLength(6);
      for (const l of skipped) {
        expect(l.code).toBe('credit_budget');
        expect(l.requestId).toBeUndefined();
      }

      // Resumed with a higher budget: the skipped rows run, the others keep their lines.
      const kept = lines.filter((l) => l.outcome === 'found');
      await expect(resumeBatch(client, batchId, { maxCredits: 4 })).rejects.toThrow(
        /give a higher --max-credits/,
      );
      expect(await resumeBatch(client, batchId, { maxCredits: 100 })).toBe('reopened');
      const again = await client.workflow.getHandle(handle.workflowId).result();
      const last = env.emu.stats();
      expect(again).toMatchObject({ state: 'done', done: 10, found: 10, maxCredits: 100 });
      expect(again.skipped ?? 0).toBe(0);
      expect(again.credits).toBe(10);
      expect(last.jobsSubmitted - before.jobsSubmitted).toBe(10);
      expect(last.creditsCharged - before.creditsCharged).toBe(10);
      const final = await readOutput(output);
      expect(final).toHaveLength(10);
      expect(new Set(final.map((l) => l.row)).size).toBe(10);
      expect(final.every((l) => l.outcome === 'found')).toBe(true);
      // The rows that ran the first time kept their lines (same jobs, same request ids).
      for (const l of kept) expect(final.find((f) => f.row === l.row)).toEqual(l);
    });
  }, 120_000);
});
