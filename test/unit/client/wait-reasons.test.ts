// Why work waits, from what Temporal and the keys' throttles say (pure, with an injected clock):
// a key's spent hour as a sent log an ETA counts, the reasons a batch and a call show, and the
// reporter that never lets a wait go unsaid.
import Long from 'long';
import { describe, expect, it } from 'vitest';
import { etaSeconds, keyWindows } from '../../../src/batch/plan.js';
import type { BatchProgress } from '../../../src/batch/types.js';
import { batchWaitReasons, etaFromKeyUse } from '../../../src/client/batch-waits.js';
import { windowUseOf } from '../../../src/client/key-window-use.js';
import {
  pendingWorkOf,
  permitWaitReason,
  retryReasons,
  silentStepReasons,
  untakenForMs,
} from '../../../src/client/wait-reasons.js';
import { reportWaits } from '../../../src/cli/wait-reports.js';
import type { ThrottleStatus } from '../../../src/throttle/protocol.js';
import type { RequesterView, SchedulerSnapshot } from '../../../src/throttle/scheduler.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const T0 = Date.parse('2026-11-27T12:00:00Z');

/** A throttle's state as of `asOf`, with `hourUsed` requests still in its hour window. */
function status(asOf: number, hourUsed: number, minuteUsed = 0, waiting = 0): ThrottleStatus {
  const use = (used: number, limit: number, spanMs: number) => ({
    used,
    limit,
    configured: limit,
    spanMs,
  });
  return {
    keyId: 'k1',
    settings: {
      minuteMs: MINUTE,
      hourMs: HOUR,
      marginMs: 200,
      horizonMs: MINUTE,
      submitShare: 0.5,
    },
    snapshot: {
      asOf,
      minute: use(minuteUsed, 100, MINUTE),
      hour: use(hourUsed, 1000, HOUR),
      waiting,
      heldForFollowUps: 0,
      breaker: { open: false },
      recent429s: [],
      counts: {
        submit: 0,
        poll: 0,
        page: 0,
        usage: 0,
        feedback: 0,
        retryLater: 0,
        refused: 0,
        rateLimited: 0,
      },
    },
  };
}

/**
 * The key sent 1,000 requests between 50 and 40 minutes ago (its hour window full): they leave
 * it between 10 and 20 minutes from now. `later[j]` is the state as of now + (j+1) * 5 minutes.
 */
const fullHourLater = () => {
  const leaveAt = (t: number) =>
    Math.round(1000 * Math.min(1, Math.max(0, (t - 10 * MINUTE) / (10 * MINUTE))));
  return Array.from({ length: 12 }, (_, j) =>
    status(T0 + (j + 1) * 5 * MINUTE, 1000 - leaveAt((j + 1) * 5 * MINUTE)),
  );
};
const fullHour = () => windowUseOf(status(T0, 1000), fullHourLater());

describe("a key's window use, from its throttle", () => {
  it('places what the hour holds where it leaves the window, and says when the window frees', () => {
    const use = fullHour();
    expect(use.hour).toMatchObject({ used: 1000, limit: 1000 });
    expect(use.sent.reduce((a, [, n]) => a + n, 0)).toBe(1000);
    // Nothing frees before the stretch that ends 15 minutes from now.
    expect(use.hourFreesAt).toBe(T0 + 15 * MINUTE);
  });

  it('an ETA counts the spent hour: 100 requests wait for the window to slide, not 1 minute', () => {
    const key = keyWindows({ id: 'k1', perMinute: 100, perHour: 1000 }, 1);
    const alone = etaSeconds({
      nowMs: T0,
      paused: false,
      rowsLeft: 50,
      requestsPerRow: 2,
      keys: [key],
      sent: {},
    })!;
    const counted = etaSeconds({
      nowMs: T0,
      paused: false,
      rowsLeft: 50,
      requestsPerRow: 2,
      keys: [key],
      sent: { k1: fullHour().sent },
    })!;
    expect(alone).toBeLessThanOrEqual(60);
    expect(counted).toBeGreaterThan(10 * 60);
  });
});

const progress = (over: Partial<BatchProgress> = {}): BatchProgress =>
  ({
    batchId: 'b1',
    endpoint: 'person_enrichment',
    state: 'running',
    total: 400,
    done: 192,
    found: 192,
    empty: 0,
    failed: 0,
    failedByCode: {},
    inFlight: 10,
    window: 10,
    pool: [{ id: 'k1', weight: 100, started: 202 }],
    rowsPerSecond: 3,
    etaSeconds: 27,
    etaBasis: {
      rowsLeft: 208,
      requestsPerRow: 2,
      keys: [keyWindows({ id: 'k1', perMinute: 100, perHour: 1000 }, 1)],
    },
    ...over,
  }) as BatchProgress;

describe("a batch's reasons to wait", () => {
  it('names the key whose hour window is full, until when, and its ETA counts it', () => {
    const keys = new Map([['k1', fullHour()]]);
    const reasons = batchWaitReasons(progress(), keys, T0);
    expect(reasons).toEqual([
      {
        kind: 'throttle',
        keyId: 'k1',
        until: T0 + 15 * MINUTE,
        message:
          "key k1's hour window is full (1000/1000 requests in the last hour): requests go again as it slides, from about 2026-11-27T12:15:00Z",
      },
    ]);
    expect(etaFromKeyUse(progress(), keys, T0)).toBeGreaterThan(15 * 60);
  });

  it("says when the batch's own requests wait for its fair share or its tenant's budget, never another's", () => {
    const view = (id: string, waiting: number, reason?: 'fair_share' | 'budget') =>
      ({
        id,
        class: 'batch',
        tenant: 'default',
        minute: 10,
        hour: 100,
        minuteShare: 0.3,
        hourShare: 0.3,
        waiting,
        ...(reason ? { reason } : {}),
        ...(reason === 'budget' ? { budget: 'requests_per_hour' } : {}),
      }) as RequesterView;
    const roomy = (requesters: RequesterView[]) =>
      windowUseOf(
        { ...status(T0, 300), scheduler: { requesters } as unknown as SchedulerSnapshot },
        Array.from({ length: 12 }, (_, j) => status(T0 + (j + 1) * 5 * MINUTE, 0)),
      );
    const shared = roomy([view('batch:b1', 40, 'fair_share'), view('batch:b2', 5, 'budget')]);
    expect(batchWaitReasons(progress(), new Map([['k1', shared]]), T0)).toEqual([
      {
        kind: 'fair_share',
        keyId: 'k1',
        message: "key k1: 40 requests wait for the batch's fair share (other work shares the key)",
      },
    ]);
    // Another batch's budget is not this batch's reason; its own is.
    expect(batchWaitReasons(progress({ batchId: 'b2' }), new Map([['k1', shared]]), T0)).toEqual([
      {
        kind: 'budget',
        keyId: 'k1',
        message: "key k1: 5 requests wait for the batch's tenant's budget of requests an hour",
      },
    ]);
    // A full hour window and the tenant's budget both hold it: both are said (its fair share
    // is no reason while the window itself holds every batch).
    const full = windowUseOf(
      {
        ...status(T0, 1000),
        scheduler: {
          requesters: [view('batch:b1', 9, 'budget'), view('batch:b2', 5, 'fair_share')],
        } as unknown as SchedulerSnapshot,
      },
      fullHourLater(),
    );
    expect(batchWaitReasons(progress(), new Map([['k1', full]]), T0).map((r) => r.kind)).toEqual([
      'throttle',
      'budget',
    ]);
    expect(
      batchWaitReasons(progress({ batchId: 'b2' }), new Map([['k1', full]]), T0).map((r) => r.kind),
    ).toEqual(['throttle']);
    // Nothing waiting, or waiting for nothing but a window with room: no reason.
    const calm = roomy([view('batch:b1', 0), view('batch:b3', 7, 'fair_share')]);
    expect(batchWaitReasons(progress(), new Map([['k1', calm]]), T0)).toEqual([]);
  });

  it('a pause is its reason; a key with room is none', () => {
    const roomy = windowUseOf(
      status(T0, 300),
      Array.from({ length: 12 }, (_, j) => status(T0 + (j + 1) * 5 * MINUTE, 0)),
    );
    expect(batchWaitReasons(progress(), new Map([['k1', roomy]]), T0)).toEqual([]);
    expect(
      batchWaitReasons(
        progress({ paused: { code: 'insufficient_credits', message: 'credits exhausted' } }),
        new Map(),
        T0,
      ),
    ).toMatchObject([{ kind: 'paused' }]);
  });
});

describe("a call's reasons to wait", () => {
  it('reads a permit wait from its details, a budget as budget', () => {
    expect(
      permitWaitReason(
        "person_enrichment: throttled: submit waits for a permit on key k1: the key's hour window is full, until about 2026-11-27T12:15:00Z",
      ),
    ).toEqual({
      kind: 'throttle',
      keyId: 'k1',
      until: T0 + 15 * MINUTE,
      message:
        "submit waits for a permit on key k1: the key's hour window is full, until about 2026-11-27T12:15:00Z",
    });
    expect(
      permitWaitReason(
        'x: throttled: submit waits for a permit on key k1: the tenant budget of team-a is spent, until about 2026-11-27T13:00:00Z',
      ),
    ).toMatchObject({ kind: 'budget', keyId: 'k1' });
  });

  it('a task no worker took, a step silent since its worker went, a step retried after failures', () => {
    const ts = (ms: number) => ({ seconds: Long.fromNumber(Math.floor(ms / 1000)), nanos: 0 });
    const work = pendingWorkOf({
      pendingWorkflowTask: { state: 1, scheduledTime: ts(T0 - 6_000) },
      pendingActivities: [
        {
          activityType: { name: 'pollJob' },
          state: 2,
          lastStartedTime: ts(T0 - 20_000),
          lastWorkerIdentity: '42@host-a',
          attempt: 1,
        },
        {
          activityType: { name: 'submitJob' },
          state: 1,
          scheduledTime: ts(T0 - 1_000),
          attempt: 3,
          lastFailure: { message: 'connect ECONNREFUSED' },
          nextAttemptScheduleTime: ts(T0 + 4_000),
        },
      ],
    });
    expect(untakenForMs(work, T0)).toBe(6_000);
    expect(silentStepReasons(work, T0)).toMatchObject([
      {
        kind: 'task_not_taken',
        message: expect.stringContaining('its pollJob step started 20 s ago on worker 42@host-a'),
      },
    ]);
    expect(retryReasons(work, T0)).toEqual([
      {
        kind: 'retrying',
        until: T0 + 4_000,
        message: 'submitJob failed 2 times (connect ECONNREFUSED); next attempt in 4 s',
      },
    ]);
  });
});

describe('reportWaits', () => {
  it('says each new reason at once, again while it lasts, and when the work goes on', async () => {
    let now = 0;
    const lines: string[] = [];
    const answers = [
      { reasons: [] },
      { reasons: [{ kind: 'no_worker', message: 'no worker is polling task queue q' }] },
      { reasons: [{ kind: 'no_worker', message: 'no worker is polling task queue q' }] },
      { reasons: [] },
    ];
    let finish: (v: string) => void = () => undefined;
    const work = new Promise<string>((r) => (finish = r));
    const result = reportWaits(
      work,
      async () => {
        now += 40_000;
        const a = answers.shift();
        if (!a) finish('done');
        return a ?? { reasons: [] };
      },
      { everyMs: 1, repeatMs: 30_000, write: (l) => lines.push(l), now: () => now },
    );
    expect(await result).toBe('done');
    expect(lines).toEqual([
      'waiting: no worker is polling task queue q',
      'still waiting (120 s): no worker is polling task queue q',
      'going on: nothing holds it back now',
    ]);
  });
});
