// The row journal of compact batches: who may send a row, and what a later attempt finds.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  claimRow,
  forgetJournals,
  journalPathOf,
  recordRow,
  rowEntry,
} from '../../../src/batch-io/row-journal.js';

const fresh = () =>
  journalPathOf(join(mkdtempSync(join(tmpdir(), 'pcds-journal-')), 'out.jsonl'), 'b1');

describe('row journal', () => {
  it('gives a row to its first claimant only; a later attempt finds the send', async () => {
    const path = fresh();
    expect(await claimRow(path, 7, 'run/1/1')).toEqual({ mine: true });
    // The same attempt may claim again (a repeat after a 429).
    expect(await claimRow(path, 7, 'run/1/1')).toEqual({ mine: true });
    const other = await claimRow(path, 7, 'run/1/2');
    expect(other).toMatchObject({ mine: false, entry: { state: 'sending', owner: 'run/1/1' } });
  });

  it('lets a released row be claimed again, and never an accepted one', async () => {
    const path = fresh();
    await claimRow(path, 1, 'a');
    await recordRow(path, { row: 1, state: 'released', owner: 'a' });
    expect(await claimRow(path, 1, 'b')).toEqual({ mine: true });
    await recordRow(path, {
      row: 1,
      state: 'accepted',
      owner: 'b',
      requestId: 'req-1',
      keyId: 'k',
    });
    expect(await claimRow(path, 1, 'b')).toMatchObject({
      mine: false,
      entry: { state: 'accepted' },
    });
    expect(await claimRow(path, 1, 'c')).toMatchObject({
      mine: false,
      entry: { requestId: 'req-1' },
    });
  });

  it('is read back from the file by a process that never saw it (a new worker)', async () => {
    const path = fresh();
    await claimRow(path, 3, 'a');
    await recordRow(path, { row: 3, state: 'accepted', owner: 'a', requestId: 'req-3' });
    forgetJournals();
    expect(await rowEntry(path, 3)).toMatchObject({ state: 'accepted', requestId: 'req-3' });
    expect(await rowEntry(path, 4)).toBeUndefined();
    // Entries name rows, owners, keys and request ids only.
    for (const line of readFileSync(path, 'utf8').trim().split('\n'))
      expect(Object.keys(JSON.parse(line) as object).sort()).toEqual(
        expect.arrayContaining(['owner', 'row', 'state']),
      );
  });
});
