// The no-worker check's reading of DescribeTaskQueue's pollers, and the heartbeat helpers that
// keep an activity's details through a request's bare heartbeats.
import { msNumberToTs } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { heartbeatWhere, withHeartbeat } from '../../../src/activities/heartbeat.js';
import { publishedText } from '../../../src/cli/batch/text.js';
import {
  NoWorkerError,
  noWorkerMessage,
  noWorkerWarning,
  POLLER_FRESH_MS,
  presenceOf,
} from '../../../src/temporal/pollers.js';

const NOW = Date.parse('2026-11-25T12:00:00Z');
const polledAgo = (ms: number) => ({ lastAccessTime: msNumberToTs(NOW - ms) });

describe('presenceOf', () => {
  it('no poller listed: no worker', () => {
    expect(presenceOf([], NOW)).toEqual({ state: 'none' });
    expect(presenceOf(undefined, NOW)).toEqual({ state: 'none' });
  });

  it('the freshest poller decides, within the window', () => {
    expect(presenceOf([polledAgo(5 * 60_000), polledAgo(20_000)], NOW)).toEqual({
      state: 'polled',
      lastPollMsAgo: 20_000,
    });
  });

  it('a poller last seen before the window is a worker gone', () => {
    expect(presenceOf([polledAgo(POLLER_FRESH_MS + 1_000)], NOW)).toEqual({ state: 'none' });
  });

  it('a poller without a time says nothing', () => {
    expect(presenceOf([{ lastAccessTime: null }], NOW)).toEqual({ state: 'none' });
  });
});

describe('the no-worker words', () => {
  it('name the task queue and the fix', () => {
    expect(noWorkerMessage('pcds')).toBe(
      'no worker is polling task queue pcds: start one with `pcds worker`',
    );
    expect(new NoWorkerError('q1', 'nothing was started')).toMatchObject({
      code: 'no_worker',
      message:
        'no worker is polling task queue q1: start one with `pcds worker` (nothing was started)',
    });
  });

  it('warn only when no worker polls (an unknown answer claims nothing)', () => {
    expect(noWorkerWarning({ state: 'none' }, 'q')).toBe(noWorkerMessage('q'));
    expect(noWorkerWarning({ state: 'polled', lastPollMsAgo: 1 }, 'q')).toBeUndefined();
    expect(noWorkerWarning({ state: 'unknown', reason: 'denied' }, 'q')).toBeUndefined();
  });

  it("a batch's last published progress says it is one, and why", () => {
    const reason = noWorkerMessage('q');
    expect(
      publishedText({
        batchId: 'b1',
        state: 'running',
        done: 12,
        failed: 1,
        summary: 'batch of 40 person_enrichment rows',
        taskQueue: 'q',
        reason,
      }),
    ).toEqual([
      `batch b1 running: 12 rows done, 1 failed (last published progress: ${reason})`,
      '  batch of 40 person_enrichment rows',
    ]);
    expect(publishedText({ batchId: 'b2', taskQueue: 'q', reason })[0]).toBe(
      `batch b2 running: no counts published yet (last published progress: ${reason})`,
    );
  });
});

describe('heartbeats', () => {
  it("a request's heartbeat repeats the activity's details instead of erasing them", async () => {
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    await env.run(async () => {
      heartbeatWhere({ row: 7, phase: 'polling', requestId: 'req-1' });
      await withHeartbeat(async () => undefined);
    });
    expect(beats).toEqual([
      { row: 7, phase: 'polling', requestId: 'req-1' },
      { row: 7, phase: 'polling', requestId: 'req-1' },
    ]);
  });
});
