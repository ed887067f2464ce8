// What operators read of the scheduler: a key's block lists the reserve in use, each requester's
// share and what its waiting requests wait for, and budgets left; a wait names its reason; a
// batch's status says what it gets of each key.
import { describe, expect, it } from 'vitest';
import { batchRequester, interactiveRequester } from '../../../src/contract/tenant.js';
import type { ThrottleStatus } from '../../../src/throttle/protocol.js';
import {
  configurePolicy,
  DEFAULT_POLICY,
  schedulePermit,
  schedulerSnapshot,
} from '../../../src/throttle/scheduler.js';
import {
  batchShareNotes,
  describePermitWait,
  formatThrottleStatus,
} from '../../../src/throttle/status-text.js';
import { createThrottleState, defaultSettings, snapshot } from '../../../src/throttle/windows.js';

const T0 = Date.parse('2026-11-27T12:00:00Z');

function busyKey(): ThrottleStatus {
  const settings = defaultSettings({ perMinute: 100, perHour: 1_000 });
  const state = createThrottleState(settings, T0);
  configurePolicy(state, { ...DEFAULT_POLICY, tenants: { alice: { requestsPerHour: 50 } } }, T0);
  for (let i = 0; i < 60; i++)
    schedulePermit(state, T0, {
      kind: 'submit',
      followUps: 0,
      requester: batchRequester('nightly', 'alice'),
    });
  for (let i = 0; i < 50; i++)
    schedulePermit(state, T0, { kind: 'poll', requester: batchRequester('adhoc', 'bob', 2) });
  schedulePermit(state, T0, { kind: 'submit', requester: interactiveRequester() });
  const now = T0 + 1_000;
  return {
    keyId: 'k1',
    settings: { ...settings },
    snapshot: snapshot(state, now),
    scheduler: schedulerSnapshot(state, now),
  };
}

describe('the scheduler as operators see it', () => {
  it("lists the reserve, each requester's share and waits, and budgets left", () => {
    const text = formatThrottleStatus(busyKey());
    expect(text).toMatch(/reserve 10% for interactive and background work: minute 1\/10 used/);
    expect(text).toMatch(
      /batch:nightly \(batch, tenant alice\): 55% \/ 55% \(50 \/ 50\), 10 waiting \(budget: requests an hour\)/,
    );
    // The rest of the minute's 90 batch slots (10 are the reserve).
    expect(text).toMatch(
      /batch:adhoc \(batch, tenant bob weight 2\): 44% \/ 44% \(40 \/ 40\), 10 waiting \(minute window\)/,
    );
    expect(text).toMatch(/interactive:default \(interactive, tenant default\)/);
    expect(text).toMatch(/alice: 0 of 50 requests left this hour/);
  });

  it('says what a batch gets of each key and what its requests wait for', () => {
    const status = busyKey();
    // Its budget wait is a `waiting:` line of its own (client/batch-waits.ts); a window's is said here.
    expect(batchShareNotes('nightly', [{ keyId: 'k1', status }, { keyId: 'k2' }])).toEqual([
      'key k1: 55% of the last hour (50 requests)',
    ]);
    expect(batchShareNotes('adhoc', [{ keyId: 'k1', status }])).toEqual([
      'key k1: 44% of the last hour (40 requests); 10 requests wait for minute window',
    ]);
    expect(batchShareNotes('other', [{ keyId: 'k1', status }])).toEqual([]);
  });

  it('names the new reasons a request waits', () => {
    const wait = { keyId: 'k1', kind: 'submit' as const, until: T0, reportAfterMs: 5_000 };
    expect(describePermitWait({ ...wait, reason: 'fair_share' })).toBe(
      "submit waits for a permit on key k1: other requesters' fair shares of the key come first, until about 2026-11-27T12:00:00Z",
    );
    expect(describePermitWait({ ...wait, reason: 'budget', budget: 'credits_per_day' })).toBe(
      "submit waits for a permit on key k1: the tenant's budget of credits a day is spent, until about 2026-11-27T12:00:00Z",
    );
  });
});
