// What a task of `pcds mcp` reports for its work: the status, where the work stands, and a poll
// interval that follows what the work waits for; how a task id names its workflow; how long an
// ended task is kept.
import { describe, expect, it } from 'vitest';
import type { BatchStatus } from '../../../src/client/batch-launch.js';
import type { BatchProgress, BatchSummary } from '../../../src/batch/types.js';
import type { PcdsClient } from '../../../src/client.js';
import {
  taskMemo,
  taskTarget,
  taskTtl,
  TASK_TTL_MS,
  TemporalTaskStore,
} from '../../../src/mcp-server/task-store.js';
import {
  batchTaskView,
  closedTaskStatus,
  permitWaitOf,
  POLL_MS,
  runningCallView,
  waitingView,
} from '../../../src/mcp-server/task-status.js';
import { describePermitWait } from '../../../src/throttle/status-text.js';

const progress = (p: Partial<BatchProgress> = {}): BatchStatus => ({
  ended: false,
  progress: {
    batchId: 'b1',
    endpoint: 'person_enrichment',
    state: 'running',
    total: 40,
    done: 12,
    found: 10,
    empty: 1,
    failed: 1,
    failedByCode: {},
    inFlight: 3,
    window: 3,
    pool: [],
    rowsPerSecond: 0.5,
    startedAt: '2026-01-01T00:00:00Z',
    runs: 1,
    output: '/root/out.jsonl',
    blankLines: 0,
    source: {} as BatchProgress['source'],
    failedRows: [],
    ...p,
  },
});

describe('batch task view', () => {
  it('rule: a running batch is working with its rows done of total, rows in flight and credits against the budget', () => {
    const v = batchTaskView(progress({ credits: 12, maxCredits: 20 }));
    expect(v.status).toBe('working');
    expect(v.statusMessage).toBe(
      'running: rows 12 of 40 done (10 found, 1 empty, 1 failed); 3 in flight; credits 12 of 20 used',
    );
  });

  it('rule: the poll interval follows the learned job time, within 2 s and 60 s, and never exceeds the time left', () => {
    expect(batchTaskView(progress({ jobMsEstimate: 8_000 })).pollInterval).toBe(8_000);
    expect(batchTaskView(progress({ jobMsEstimate: 300 })).pollInterval).toBe(POLL_MS.min);
    expect(batchTaskView(progress({ jobMsEstimate: 600_000 })).pollInterval).toBe(POLL_MS.max);
    expect(batchTaskView(progress({ jobMsEstimate: 20_000, etaSeconds: 5 })).pollInterval).toBe(
      5_000,
    );
    // Still learning: the default.
    expect(batchTaskView(progress()).pollInterval).toBe(POLL_MS.default);
  });

  it('rule: rows held by the throttle are counted with one row’s wait, and the batch is asked again when that permit is due', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    const wait = permitWaitOf(
      `person_enrichment: throttled: ${describePermitWait({
        keyId: 'k1',
        kind: 'submit',
        reason: 'hour_window',
        until: now + 3_000,
        reportAfterMs: 1_000,
      })}`,
    );
    const v = batchTaskView(progress({ jobMsEstimate: 20_000 }), { rows: 2, wait }, now);
    expect(v.statusMessage).toContain(
      "; 2 rows throttled: submit waits for a permit on key k1: the key's hour window is full, until about 2026-01-01T12:00:03Z",
    );
    expect(v.pollInterval).toBe(3_000);
    expect(batchTaskView(progress(), { rows: 1 }, now).statusMessage).toContain('1 row throttled');
    expect(batchTaskView(progress(), { rows: 0 }, now).statusMessage).not.toContain('throttled');
  });

  it('rule: a paused batch says why and is asked rarely; one no worker answers for says so', () => {
    const paused = batchTaskView(
      progress({ state: 'paused', paused: { code: 'credit_budget', message: 'budget spent' } }),
    );
    expect(paused).toMatchObject({ status: 'working', pollInterval: POLL_MS.waiting });
    expect(paused.statusMessage).toMatch(/^paused \(credit_budget\): budget spent; rows 12 of 40/);
    const published = batchTaskView({
      ended: false,
      published: { batchId: 'b1', done: 4, taskQueue: 'q', reason: 'no worker polls q' },
    });
    expect(published).toEqual({
      status: 'working',
      statusMessage: 'waiting: no worker polls q; rows 4 done as last published',
      pollInterval: POLL_MS.waiting,
    });
  });

  it('rule: an ended batch is completed, or cancelled when its summary says so; no poll interval', () => {
    const summary = {
      state: 'done',
      total: 5,
      done: 5,
      found: 4,
      empty: 1,
      failed: 0,
      skipped: 0,
    } as BatchSummary;
    expect(batchTaskView({ ended: true, summary })).toEqual({
      status: 'completed',
      statusMessage: 'done: rows 5 of 5 done (4 found, 1 empty, 0 failed)',
    });
    const cancelled = batchTaskView({
      ended: true,
      summary: { ...summary, state: 'cancelled', done: 2, found: 2, empty: 0, skipped: 3 },
    });
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.statusMessage).toContain('3 skipped (credit_budget)');
  });
});

describe('call task view', () => {
  it('rule: a throttled call says why (its current details) and is asked again when the permit is due', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    const wait = describePermitWait({
      keyId: 'k1',
      kind: 'poll',
      reason: 'minute_window',
      until: now + 7_000,
      reportAfterMs: 1_000,
    });
    const details = `person_enrichment: throttled: ${wait} (request r-1)`;
    expect(runningCallView({ shownState: 'throttled', phase: 'polling', details, now })).toEqual({
      status: 'working',
      statusMessage: `throttled: ${wait}`,
      pollInterval: 7_000,
    });
    expect(permitWaitOf(details).message).toMatch(/minute window is full/);
    // A permit due later than a minute: asked every minute; details not read: every 10 s.
    const late = details.replace(/until about \S+Z/, 'until about 2026-01-01T13:00:00Z');
    expect(runningCallView({ shownState: 'throttled', details: late, now }).pollInterval).toBe(
      POLL_MS.max,
    );
    expect(runningCallView({ shownState: 'throttled', phase: 'polling' })).toMatchObject({
      statusMessage: expect.stringMatching(/^throttled/),
      pollInterval: POLL_MS.throttled,
    });
  });

  it('rule: a call that is not throttled shows its phase and polls', () => {
    expect(runningCallView({ shownState: 'polling', phase: 'polling', polls: 3 })).toEqual({
      status: 'working',
      statusMessage: 'polling (3 polls so far)',
      pollInterval: POLL_MS.default,
    });
    expect(runningCallView({ noWorker: 'no worker polls q' }).pollInterval).toBe(POLL_MS.waiting);
  });

  it('rule: closed executions read as completed, cancelled or failed', () => {
    expect(closedTaskStatus('COMPLETED')).toBe('completed');
    expect(closedTaskStatus('CANCELLED')).toBe('cancelled');
    for (const s of ['FAILED', 'TERMINATED', 'TIMED_OUT'])
      expect(closedTaskStatus(s)).toBe('failed');
  });
});

describe('why work waits, in task statuses', () => {
  const now = Date.parse('2026-11-27T12:00:00Z');

  it("a batch task says why it waits (a key's hour window full until a time) and is asked again then", () => {
    const view = batchTaskView(
      {
        ...progress(),
        waiting: [
          {
            kind: 'throttle',
            keyId: 'k1',
            until: now + 20_000,
            message: "key k1's hour window is full (1000/1000 requests in the last hour)",
          },
        ],
      } as BatchStatus,
      undefined,
      now,
    );
    expect(view.statusMessage).toContain(
      "waiting: key k1's hour window is full (1000/1000 requests in the last hour)",
    );
    expect(view.pollInterval).toBe(20_000);
  });

  it('a batch task waiting its fair share says so and is polled as a running batch, not as one held back', () => {
    const sharing = {
      kind: 'fair_share',
      keyId: 'k1',
      message: "key k1: 40 requests wait for the batch's fair share (other work shares the key)",
    };
    const view = batchTaskView(
      { ...progress({ jobMsEstimate: 8_000 }), waiting: [sharing] } as BatchStatus,
      undefined,
      now,
    );
    expect(view.statusMessage).toContain(`waiting: ${sharing.message}`);
    expect(view.pollInterval).toBe(8_000);
    // Held by its tenant's budget (no time said): asked rarely.
    const held = batchTaskView(
      {
        ...progress({ jobMsEstimate: 8_000 }),
        waiting: [sharing, { ...sharing, kind: 'budget', keyId: 'k2', message: 'budget' }],
      } as BatchStatus,
      undefined,
      now,
    );
    expect(held.pollInterval).toBe(POLL_MS.waiting);
  });

  it('a call task whose work no worker takes says so, a budget by its message', () => {
    expect(
      waitingView(
        [
          { kind: 'task_not_taken', message: 'no worker has taken its next task for 6 s' },
          { kind: 'budget', message: 'the tenant budget of team-a is spent', until: now + 5_000 },
        ],
        now,
      ),
    ).toEqual({
      status: 'working',
      statusMessage:
        'waiting: no worker has taken its next task for 6 s; waiting: the tenant budget of team-a is spent',
      pollInterval: 5_000,
    });
  });
});

describe('task ids and time to live', () => {
  it('rule: a task id is the workflow id of a call, batch or export, and nothing else', () => {
    expect(taskTarget('call-person_enrichment-k1')).toEqual({
      kind: 'call',
      id: 'call-person_enrichment-k1',
    });
    expect(taskTarget('batch-b_1')).toEqual({ kind: 'batch', id: 'b_1' });
    expect(taskTarget('search-export-e1')).toEqual({ kind: 'export', id: 'e1' });
    for (const id of ['b_1', 'batch-', 'batch-../x', 'search-export-a b', 'other-1'])
      expect(taskTarget(id), id).toBeUndefined();
  });

  it('rule: the time to live asked is kept within bounds; none asked is the default', () => {
    expect(taskTtl(undefined)).toBe(TASK_TTL_MS.default);
    expect(taskTtl(null)).toBe(TASK_TTL_MS.default);
    expect(taskTtl(1)).toBe(TASK_TTL_MS.min);
    expect(taskTtl(3_600_000)).toBe(3_600_000);
    expect(taskTtl(1e12)).toBe(TASK_TTL_MS.max);
  });
});

describe('task store: time to live', () => {
  const summary = { state: 'done', total: 1, done: 1, found: 1, empty: 0, failed: 0 };
  const storeAt = (now: number, closed: boolean) =>
    new TemporalTaskStore({
      now: () => now,
      visible: () => true,
      files: { shown: (path: string) => Promise.resolve(path) },
      client: () =>
        Promise.resolve({
          getBatch: () => ({
            workflow: {
              describe: () =>
                Promise.resolve({
                  status: { name: closed ? 'COMPLETED' : 'RUNNING' },
                  startTime: new Date('2026-01-01T00:00:00Z'),
                  ...(closed ? { closeTime: new Date('2026-01-01T00:10:00Z') } : {}),
                  memo: taskMemo(3_600_000, new Date('2026-01-01T00:00:00Z')),
                  typedSearchAttributes: { get: () => undefined },
                  raw: {},
                }),
            },
            status: () =>
              Promise.resolve(
                closed
                  ? { ended: true, summary }
                  : { ended: false, progress: { ...progress().progress! } },
              ),
          }),
        } as unknown as PcdsClient),
    });

  it('rule: an ended task is found until its time to live from creation has passed, then not', async () => {
    const created = Date.parse('2026-01-01T00:00:00Z');
    const within = await storeAt(created + 3_599_000, true).getTask('batch-b1');
    expect(within).toMatchObject({
      taskId: 'batch-b1',
      status: 'completed',
      ttl: 3_600_000,
      createdAt: '2026-01-01T00:00:00.000Z',
      lastUpdatedAt: '2026-01-01T00:10:00.000Z',
    });
    expect(await storeAt(created + 3_601_000, true).getTask('batch-b1')).toBeNull();
    // Running work is never dropped: its task stays while it works.
    expect(await storeAt(created + 86_400_000, false).getTask('batch-b1')).toMatchObject({
      status: 'working',
    });
  });
});
