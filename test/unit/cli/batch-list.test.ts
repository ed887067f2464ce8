// The pure parts of `pcds batch list`: its visibility query, its age and table text.
import { describe, expect, it } from 'vitest';
import { ageText, batchListQuery, batchListText } from '../../../src/cli/batch/list.js';

describe('batch list', () => {
  it('asks for both batch type names, and leaves out the runs a batch continued from', () => {
    expect(batchListQuery()).toBe(
      'WorkflowType IN ("pcdsBatch", "batchWorkflow") AND ExecutionStatus != "ContinuedAsNew"',
    );
    expect(batchListQuery('paused')).toBe(
      'WorkflowType IN ("pcdsBatch", "batchWorkflow") AND ExecutionStatus = "Running" AND PcdsState = "paused"',
    );
    expect(batchListQuery('cancelled')).toContain('ExecutionStatus = "Canceled"');
  });

  it('writes ages in the largest sensible units', () => {
    expect([45, 720, 3 * 3600 + 5 * 60, 50 * 3600].map(ageText)).toEqual([
      '45s',
      '12m',
      '3h 05m',
      '2d 02h',
    ]);
  });

  it('aligns a table with a dash for a counter not set yet', () => {
    expect(
      batchListText([
        {
          batchId: 'b-long-id',
          state: 'running',
          ageSeconds: 5,
          startedAt: '2026-01-01T00:00:00.123Z',
        },
        {
          batchId: 'b1',
          state: 'done',
          rowsDone: 120,
          rowsFailed: 3,
          ageSeconds: 4000,
          startedAt: '2026-01-01T00:00:00.000Z',
        },
      ]),
    ).toBe(
      [
        'BATCH      STATE    DONE  FAILED  AGE     STARTED',
        'b-long-id  running  -     -       5s      2026-01-01T00:00:00Z',
        'b1         done     120   3       1h 06m  2026-01-01T00:00:00Z',
        '',
      ].join('\n'),
    );
    expect(batchListText([])).toBe('no batches\n');
  });
});
