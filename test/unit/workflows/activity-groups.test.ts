// Typed activity groups: each workflow proxy is typed with one group, so calling an activity
// through a proxy with another group's timeouts and retry policy is a type error (tsc checks the
// expectations below), and no activity belongs to two groups.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../../src/temporal/cli-binary.js';
import { ACTIVITY_GROUPS } from '../../../src/workflows/activity-groups.js';
import type { submitActivities, pollActivities } from '../../../src/workflows/call-steps.js';
import type {
  accounts,
  compactRowsWith,
  exporting,
  files,
  rows,
} from '../../../src/workflows/batch-activities.js';

// Type level (checked by tsc): each proxy has its group's activities, and none of another group.
type Submit = typeof submitActivities;
type Reads = ReturnType<typeof pollActivities>;
type CompactRows = ReturnType<typeof compactRowsWith>;
export type Allowed = [
  Submit['submitCall'],
  Reads['pollCall'],
  (typeof files)['readStoredRows'],
  (typeof exporting)['reopenStoredResults'],
  (typeof rows)['existingRowOutcome'],
  (typeof accounts)['batchKeyPool'],
  CompactRows['runBatchRow'],
];
// @ts-expect-error a poll is retried by Temporal; the submit proxy never retries
export type PollThroughSubmit = Submit['pollCall'];
// @ts-expect-error a submit through the read proxy would be retried by Temporal
export type SubmitThroughReads = Reads['submitCall'];
// @ts-expect-error a row's earlier call may run for hours: not with the 30-second store steps
export type RowOutcomeThroughFiles = (typeof files)['existingRowOutcome'];
// @ts-expect-error a compact row runs for hours: not with the accounts' minute
export type CompactRowThroughAccounts = (typeof accounts)['runBatchRow'];

describe('activity groups', () => {
  it('hold each activity once', () => {
    const names = Object.values(ACTIVITY_GROUPS).flat();
    expect(names.length).toBeGreaterThan(10);
    expect(new Set(names).size).toBe(names.length);
  });

  it('type every proxy of the workflows', () => {
    const dir = join(projectRoot(), 'src', 'workflows');
    const typed: string[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts')))
      for (const m of readFileSync(join(dir, file), 'utf8').matchAll(
        /proxy(?:Local)?Activities<(\w+)>/g,
      ))
        typed.push(m[1]);
    expect(typed.length).toBeGreaterThanOrEqual(8);
    // A group's type, never a whole set of activities (Activities, BatchActivities, ...).
    const groups = [
      ...readFileSync(join(dir, 'activity-groups.ts'), 'utf8').matchAll(
        /export type (\w+) = Group</g,
      ),
    ].map((m) => m[1]);
    expect(typed.filter((t) => !groups.includes(t))).toEqual([]);
  });
});
