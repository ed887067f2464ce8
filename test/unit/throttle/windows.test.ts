// The two-window reservation log: bursts, both windows, margin, horizon, closing after a 429,
// learning a lower limit and recovering, the credit breaker and the share kept for submits.
import { describe, expect, it } from 'vitest';
import {
  confirm,
  configureLimits,
  configureTiming,
  createThrottleState,
  defaultSettings,
  timingOf,
  creditsExhausted,
  rateLimited,
  reserve,
  resetCredits,
  snapshot,
  summaryLine,
  type PermitAnswer,
  type PermitKind,
  type ThrottleSettings,
  type ThrottleState,
} from '../../../src/throttle/windows.js';

const T0 = 1_700_000_000_000;

// A "minute" of 1 s and an "hour" of 10 s keep the arithmetic readable.
function settings(over: Partial<ThrottleSettings> = {}): ThrottleSettings {
  return {
    limits: { perMinute: 10, perHour: 25 },
    minuteMs: 1_000,
    hourMs: 10_000,
    marginMs: 50,
    horizonMs: 100_000,
    leadMs: 0,
    confirmAfterMs: 5,
    submitShare: 0,
    submitShareLeadMs: 0,
    defaultRetryAfterMs: 1_000,
    recentLimit: 3,
    ...over,
  };
}

function granted(answer: PermitAnswer): number {
  if (answer.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(answer)}`);
  return answer.at;
}

/** Largest count of reservations in any half-open window (x - span, x], checked by brute force. */
function maxInAnyWindow(times: number[], span: number): number {
  let max = 0;
  for (const x of times) max = Math.max(max, times.filter((t) => t > x - span && t <= x).length);
  return max;
}

describe('reserve', () => {
  it('grants a burst up to the minute limit at once, then waits for the first to leave the window plus the margin', () => {
    const state = createThrottleState(settings(), T0);
    const ats = Array.from({ length: 10 }, () => granted(reserve(state, T0, 'submit')));
    expect(ats).toEqual(Array(10).fill(T0));
    const eleventh = reserve(state, T0, 'submit');
    // A grant later than asked names what holds it back.
    expect(eleventh).toEqual({
      kind: 'granted',
      at: T0 + 1_050,
      confirm: true,
      waitFor: 'minute_window',
    });
  });

  it('grants for now plus the lead the caller asks for, so a slow answer is still in time', () => {
    const state = createThrottleState(settings(), T0);
    expect(reserve(state, T0, 'poll', 120)).toEqual({
      kind: 'granted',
      at: T0 + 120,
      confirm: false,
    });
    for (let i = 0; i < 9; i++) reserve(state, T0, 'poll', 120);
    expect(reserve(state, T0, 'poll', 120)).toEqual({
      kind: 'granted',
      at: T0 + 1_170,
      confirm: true,
      waitFor: 'minute_window',
    });
  });

  it('does not ask to confirm a reservation for now', () => {
    const state = createThrottleState(settings(), T0);
    expect(reserve(state, T0, 'poll')).toEqual({ kind: 'granted', at: T0, confirm: false });
  });

  it('spreads a long queue so that no window of either span ever exceeds its limit', () => {
    const state = createThrottleState(settings(), T0);
    const ats: number[] = [];
    let now = T0;
    // Arrivals at irregular times, faster than the limits allow.
    for (let i = 0; i < 80; i++) {
      now += (i * 37) % 90;
      ats.push(granted(reserve(state, now, i % 3 === 0 ? 'submit' : 'poll')));
    }
    expect(maxInAnyWindow(ats, 1_050)).toBeLessThanOrEqual(10);
    expect(maxInAnyWindow(ats, 10_050)).toBeLessThanOrEqual(25);
    // The hour window binds: the 26th request waits for the first to leave it.
    const sorted = [...ats].sort((a, b) => a - b);
    expect(sorted[25] - sorted[0]).toBeGreaterThanOrEqual(10_050);
  });

  it('uses the whole allowance: 25 requests within the hour take three minute-windows, no more', () => {
    const state = createThrottleState(settings(), T0);
    const ats = Array.from({ length: 25 }, () =>
      granted(reserve(state, T0, 'submit', undefined, 0)),
    );
    expect(ats.slice(0, 10)).toEqual(Array(10).fill(T0));
    expect(ats.slice(10, 20)).toEqual(Array(10).fill(T0 + 1_050));
    expect(ats.slice(20)).toEqual(Array(5).fill(T0 + 2_100));
    expect(granted(reserve(state, T0, 'submit', undefined, 0))).toBe(T0 + 10_050);
  });

  it('fills a gap left in the queue instead of appending after the last reservation', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 2, perHour: 100 } }), T0);
    granted(reserve(state, T0, 'submit', undefined, 0));
    granted(reserve(state, T0 + 900, 'submit', undefined, 0));
    // The window (T0 - 1050, T0 + 900] is full; the next fits once T0 leaves it.
    expect(granted(reserve(state, T0 + 950, 'submit', undefined, 0))).toBe(T0 + 1_050);
    expect(granted(reserve(state, T0 + 950, 'submit', undefined, 0))).toBe(T0 + 1_950);
  });

  it('makes no reservation beyond the horizon and says when to ask again', () => {
    const state = createThrottleState(settings({ horizonMs: 500 }), T0);
    for (let i = 0; i < 10; i++) granted(reserve(state, T0, 'submit', undefined, 0));
    const answer = reserve(state, T0, 'submit', undefined, 0);
    expect(answer).toEqual({ kind: 'retry', retryAt: T0 + 1_050 - 500, reason: 'minute_window' });
    expect(snapshot(state, T0).waiting).toBe(0);
    expect(granted(reserve(state, T0 + 550, 'submit', undefined, 0))).toBe(T0 + 1_050);
  });

  it('tells a caller blocked by the hour window why', () => {
    const state = createThrottleState(settings({ horizonMs: 2_000 }), T0);
    for (let i = 0; i < 10; i++) granted(reserve(state, T0, 'submit', undefined, 0));
    for (let i = 0; i < 10; i++) granted(reserve(state, T0 + 1_100, 'submit', undefined, 0));
    for (let i = 0; i < 5; i++) granted(reserve(state, T0 + 2_200, 'submit', undefined, 0));
    expect(reserve(state, T0 + 2_300, 'submit', undefined, 0)).toEqual({
      kind: 'retry',
      retryAt: T0 + 10_050 - 2_000,
      reason: 'hour_window',
    });
  });

  it('forgets reservations older than the hour span', () => {
    const state = createThrottleState(settings(), T0);
    for (let i = 0; i < 25; i++) reserve(state, T0, 'submit', undefined, 0);
    reserve(state, T0 + 20_000, 'poll');
    expect(state.log).toEqual([T0 + 20_000]);
  });
});

describe('share kept for submits', () => {
  it('lets polls fill only part of each window ahead, so a later submit goes before the queued polls', () => {
    const state = createThrottleState(
      settings({
        limits: { perMinute: 10, perHour: 1_000 },
        submitShare: 0.2,
        submitShareLeadMs: 100,
      }),
      T0,
    );
    const polls = Array.from({ length: 30 }, () => granted(reserve(state, T0, 'poll')));
    // Slots within the lead go to polls in full; later windows keep two of ten for submits.
    expect(polls.slice(0, 10)).toEqual(Array(10).fill(T0));
    expect(maxInAnyWindow(polls.slice(10), 1_050)).toBeLessThanOrEqual(8);
    const submit = granted(reserve(state, T0 + 10, 'submit'));
    expect(submit).toBeLessThan(Math.max(...polls));
    expect(submit).toBe(T0 + 1_050);
    expect(maxInAnyWindow([...polls, submit], 1_050)).toBeLessThanOrEqual(10);
  });
});

describe('after a 429', () => {
  function closedState(): { state: ThrottleState; queued: number[] } {
    const state = createThrottleState(settings(), T0);
    for (let i = 0; i < 10; i++) reserve(state, T0, 'submit');
    const queued = [granted(reserve(state, T0, 'poll')), granted(reserve(state, T0, 'poll'))];
    rateLimited(state, T0 + 100, 2_000);
    return { state, queued };
  }

  it('closes the key until Retry-After: new reservations start after it', () => {
    const { state } = closedState();
    const answer = reserve(state, T0 + 200, 'submit');
    expect(granted(answer)).toBeGreaterThanOrEqual(T0 + 2_100);
    expect(snapshot(state, T0 + 200).closedUntil).toBe(T0 + 2_100);
    // What holds it back is named, for the call's `throttled` details.
    expect(answer).toHaveProperty('waitFor');
  });

  it('names no wait for a grant as early as asked', () => {
    const state = createThrottleState(settings(), T0);
    expect(reserve(state, T0, 'poll', 120)).not.toHaveProperty('waitFor');
  });

  it('refuses the confirmation of a reservation made before the 429 and drops it', () => {
    const { state, queued } = closedState();
    expect(confirm(state, queued[0], queued[0], 'poll')).toEqual({
      kind: 'retry',
      retryAt: T0 + 2_100,
      reason: 'closed',
    });
    expect(state.log.filter((t) => t > T0 + 1_000)).toEqual([]);
  });

  it('keeps counting grants already on their way when a 429 comes, and drops the ones still to confirm', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 3, perHour: 100 } }), T0);
    const onTheirWay = [
      granted(reserve(state, T0, 'poll', 200)),
      granted(reserve(state, T0, 'poll', 200)),
    ];
    const waiting = reserve(state, T0, 'poll', 200);
    const laterStill = reserve(state, T0, 'poll', 200);
    expect(laterStill).toMatchObject({ kind: 'granted', confirm: true });
    expect(waiting).toMatchObject({ kind: 'granted', confirm: false });
    rateLimited(state, T0 + 100, 1_000);
    // The three sent without confirmation stay in the log; the one that must confirm is gone.
    expect(state.log).toEqual([...onTheirWay, T0 + 200]);
  });

  it('eases back in: half the minute limit for one window after reopening, then the full limit', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 10, perHour: 1_000 } }), T0);
    for (let i = 0; i < 10; i++) reserve(state, T0, 'submit');
    // The tenth was refused: the service allows nine, and half of that while reopening.
    expect(rateLimited(state, T0 + 100, 1_000).learned).toEqual({ window: 'minute', limit: 9 });
    const reopen = T0 + 1_100;
    const ats = Array.from({ length: 12 }, () => granted(reserve(state, T0 + 1_200, 'submit')));
    expect(ats.slice(0, 5)).toEqual(Array(5).fill(T0 + 1_200));
    expect(ats.filter((t) => t < reopen + 1_000)).toHaveLength(5);
    expect(ats.slice(5).every((t) => t >= reopen + 1_000)).toBe(true);
    expect(maxInAnyWindow(ats, 1_050)).toBe(9);
  });

  it('confirms a reservation when the key is open', () => {
    const state = createThrottleState(settings(), T0);
    for (let i = 0; i < 10; i++) reserve(state, T0, 'submit');
    const at = granted(reserve(state, T0, 'poll'));
    expect(confirm(state, at, at, 'poll')).toEqual({ kind: 'granted', at, confirm: false });
  });

  it('moves a grant confirmed well after its time to now, checking the windows again', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 2, perHour: 100 } }), T0);
    const first = granted(reserve(state, T0, 'submit'));
    granted(reserve(state, T0 + 500, 'submit'));
    // The first grant reached its caller 300 ms late: it is sent at T0 + 300, not T0.
    const moved = confirm(state, T0 + 300, first, 'submit');
    expect(moved).toEqual({ kind: 'granted', at: T0 + 300, confirm: false });
    expect(state.log).toEqual([T0 + 300, T0 + 500]);
    // Within half the margin, a confirmation keeps its slot.
    const third = granted(reserve(state, T0 + 600, 'poll'));
    expect(confirm(state, third + 20, third, 'poll')).toEqual({
      kind: 'granted',
      at: third,
      confirm: false,
    });
  });

  it('learns a lower limit when the log had room, and raises it back one step per clean window', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 10, perHour: 1_000 } }), T0);
    for (let i = 0; i < 6; i++) reserve(state, T0, 'submit');
    const event = rateLimited(state, T0 + 10, 300);
    // Six requests in the window, the sixth refused: the service allows five.
    expect(event.learned).toEqual({ window: 'minute', limit: 5 });
    expect(state.effective.perMinute).toBe(5);
    // Eased to half while the key reopens.
    expect(snapshot(state, T0 + 10).minute.limit).toBe(3);
    expect(snapshot(state, T0 + 10).minute.configured).toBe(10);
    // One clean window after the key reopens (T0 + 310) the limit rises by one (a twentieth of
    // 10, rounded up), and by one more each further clean window.
    reserve(state, T0 + 310 + 1_040, 'poll');
    expect(state.effective.perMinute).toBe(5);
    reserve(state, T0 + 310 + 1_050, 'poll');
    expect(state.effective.perMinute).toBe(6);
    reserve(state, T0 + 310 + 1_050 * 5, 'poll');
    expect(state.effective.perMinute).toBe(10);
    reserve(state, T0 + 310 + 1_050 * 50, 'poll');
    expect(state.effective.perMinute).toBe(10);
  });

  it('applies a learned limit to new reservations', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 10, perHour: 1_000 } }), T0);
    for (let i = 0; i < 8; i++) reserve(state, T0, 'submit');
    expect(rateLimited(state, T0 + 10, 0).learned).toEqual({ window: 'minute', limit: 7 });
    const ats = Array.from({ length: 12 }, () => granted(reserve(state, T0 + 20, 'poll')));
    const easeEnd = T0 + 10 + 1_000;
    expect(
      maxInAnyWindow(
        ats.filter((t) => t < easeEnd),
        1_050,
      ),
    ).toBeLessThanOrEqual(4);
    expect(maxInAnyWindow(ats, 1_050)).toBeLessThanOrEqual(7);
    expect(maxInAnyWindow(ats, 1_050)).toBe(7);
  });

  it('halves at most on one 429 when the log held far fewer requests', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 10, perHour: 1_000 } }), T0);
    reserve(state, T0, 'submit');
    expect(rateLimited(state, T0 + 10, 0).learned).toEqual({ window: 'minute', limit: 5 });
    reserve(state, T0 + 20, 'submit');
    rateLimited(state, T0 + 30, 0);
    expect(state.effective.perMinute).toBe(3);
  });

  it('learns once from a burst of 429s on requests already in flight together', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 10, perHour: 1_000 } }), T0);
    for (let i = 0; i < 10; i++) reserve(state, T0, 'submit');
    expect(rateLimited(state, T0 + 10, 500).learned).toEqual({ window: 'minute', limit: 9 });
    // The other nine requests of the burst come back 429 too, while the key is closed.
    for (let i = 0; i < 9; i++)
      expect(rateLimited(state, T0 + 12 + i, 500).learned).toBeUndefined();
    expect(state.effective.perMinute).toBe(9);
    expect(state.counts.rateLimited).toBe(10);
    // A later one may lengthen the wait.
    rateLimited(state, T0 + 30, 2_000);
    expect(snapshot(state, T0 + 40).closedUntil).toBe(T0 + 2_030);
    // Once the key has reopened, a new 429 is a new event and teaches again.
    expect(rateLimited(state, T0 + 2_100, 500).learned).toBeDefined();
  });

  it('blames the hour window when Retry-After is longer than a minute', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 10, perHour: 25 } }), T0);
    for (let i = 0; i < 12; i++) reserve(state, T0, 'submit');
    const event = rateLimited(state, T0 + 1_200, 8_000);
    expect(event.learned).toEqual({ window: 'hour', limit: 13 });
  });

  it('keeps the last few 429s for operators', () => {
    const state = createThrottleState(settings(), T0);
    for (let i = 0; i < 5; i++) rateLimited(state, T0 + i * 10_000, 100 + i);
    expect(snapshot(state, T0 + 50_000).recent429s.map((e) => e.retryAfterMs)).toEqual([
      102, 103, 104,
    ]);
    expect(state.counts.rateLimited).toBe(5);
  });

  it('closes for the default wait when the 429 has no Retry-After', () => {
    const state = createThrottleState(settings(), T0);
    rateLimited(state, T0, undefined);
    expect(snapshot(state, T0).closedUntil).toBe(T0 + 1_000);
  });
});

describe('credit breaker', () => {
  it('refuses submits without sending while open, lets polls and usage through, and closes on reset', () => {
    const state = createThrottleState(settings(), T0);
    creditsExhausted(state, T0);
    expect(reserve(state, T0 + 1, 'submit')).toEqual({
      kind: 'refused',
      code: 'insufficient_credits',
      since: T0,
    });
    for (const kind of ['poll', 'page', 'usage'] as PermitKind[]) {
      expect(reserve(state, T0 + 1, kind).kind).toBe('granted');
    }
    expect(summaryLine(snapshot(state, T0 + 1))).toContain('credit breaker OPEN');
    expect(resetCredits(state, T0 + 2, 'cli')).toBe(true);
    expect(reserve(state, T0 + 3, 'submit').kind).toBe('granted');
    expect(snapshot(state, T0 + 3).breaker).toEqual({
      open: false,
      resetAt: T0 + 2,
      resetBy: 'cli',
    });
  });

  it('refuses the confirmation of a submit when the breaker opened meanwhile', () => {
    const state = createThrottleState(settings(), T0);
    for (let i = 0; i < 10; i++) reserve(state, T0, 'poll');
    const at = granted(reserve(state, T0, 'submit'));
    creditsExhausted(state, T0 + 5);
    expect(confirm(state, at, at, 'submit').kind).toBe('refused');
    expect(state.log).not.toContain(at);
  });
});

describe('configuration and reporting', () => {
  it('follows new configured limits unless a learned limit is lower', () => {
    const state = createThrottleState(settings({ limits: { perMinute: 10, perHour: 100 } }), T0);
    configureLimits(state, { perMinute: 20, perHour: 200 });
    expect(state.effective).toEqual({ perMinute: 20, perHour: 200 });
    state.effective.perMinute = 5;
    configureLimits(state, { perMinute: 30, perHour: 300 });
    expect(state.effective).toEqual({ perMinute: 5, perHour: 300 });
    expect(() => configureLimits(state, { perMinute: 0, perHour: 300 })).toThrow(
      /positive integers/,
    );
  });

  it('follows the timing of new callers: a throttle started at one time scale adopts another', () => {
    const limits = { perMinute: 2, perHour: 100 };
    // Started by workers at the real pace: a third request waits for the minute to pass.
    const state = createThrottleState(defaultSettings(limits, 1), T0);
    reserve(state, T0, 'poll');
    reserve(state, T0, 'poll');
    expect(reserve(state, T0, 'poll')).toMatchObject({ kind: 'retry', reason: 'minute_window' });
    // Workers at 60x take over: a "minute" is a second, so the third goes a second later.
    const fast = defaultSettings(limits, 60);
    expect(configureTiming(state, timingOf(fast))).toBe(true);
    expect(state.settings).toMatchObject({ minuteMs: 1_000, hourMs: 60_000, limits });
    expect(granted(reserve(state, T0 + 1_500, 'poll'))).toBeLessThan(T0 + 2_000);
    expect(configureTiming(state, timingOf(fast))).toBe(false);
    // Nonsense windows are ignored.
    expect(configureTiming(state, { ...timingOf(fast), minuteMs: 0 })).toBe(false);
    expect(state.settings.minuteMs).toBe(1_000);
  });

  it('reports used, limits, waiting and closure in one line', () => {
    const state = createThrottleState(settings(), T0);
    for (let i = 0; i < 12; i++) reserve(state, T0, i < 10 ? 'submit' : 'poll');
    rateLimited(state, T0 + 20, 500);
    const snap = snapshot(state, T0 + 30);
    expect(snap.minute).toMatchObject({ used: 10, configured: 10 });
    expect(snap.hour).toMatchObject({ used: 10, limit: 25 });
    expect(snap.waiting).toBe(0);
    expect(snap.counts).toMatchObject({ submit: 10, poll: 2, rateLimited: 1 });
    expect(summaryLine(snap)).toMatch(
      /^minute 10\/\d+ \| hour 10\/25 \| waiting 0 \| .*closed until /,
    );
  });
});

describe('budget held for the polls of accepted jobs', () => {
  it('grants no submit that would leave an accepted job without its poll in the hour', () => {
    // 25 an hour: submits stop once what they hold for polls fills the rest of the hour.
    const state = createThrottleState(settings({ horizonMs: 10_000 }), T0);
    let submits = 0;
    for (;;) {
      const a = reserve(state, T0, 'submit');
      if (a.kind !== 'granted') break;
      submits += 1;
    }
    expect(submits).toBe(12);
    expect(snapshot(state, T0).heldForFollowUps).toBe(12);
    // Each accepted job's poll still fits the hour, before any new submit.
    const polls = Array.from({ length: 12 }, () => granted(reserve(state, T0, 'poll')));
    expect(Math.max(...polls)).toBeLessThan(T0 + 10_050);
    expect(snapshot(state, T0).heldForFollowUps).toBe(0);
  });

  it('every job gets its poll within the hour, however many submits ask (a batch meets the hourly limit)', () => {
    const state = createThrottleState(settings({ horizonMs: 100_000 }), T0);
    const hourSpan = 10_050;
    // A window of jobs: each submit is followed by one poll 300 ms after it was sent.
    const pending: number[] = [];
    const pollDelays: number[] = [];
    let t = T0;
    for (let step = 0; step < 400; step++, t += 100) {
      while (pending.length > 0 && pending[0] <= t) {
        const due = pending.shift()!;
        const at = granted(reserve(state, t, 'poll'));
        pollDelays.push(at - due);
      }
      const a = reserve(state, t, 'submit');
      if (a.kind === 'granted') pending.push(a.at + 300);
    }
    expect(pollDelays.length).toBeGreaterThan(20);
    // No poll waited for the hour window to move on.
    expect(Math.max(...pollDelays)).toBeLessThan(hourSpan / 2);
  });

  it('holds nothing for a submit whose result a webhook delivers, and lets an unused hold expire', () => {
    const state = createThrottleState(settings({ followUpTtlMs: 5_000 }), T0);
    granted(reserve(state, T0, 'submit', undefined, 0));
    expect(snapshot(state, T0).heldForFollowUps).toBe(0);
    granted(reserve(state, T0, 'submit'));
    expect(snapshot(state, T0).heldForFollowUps).toBe(1);
    expect(snapshot(state, T0 + 5_001).heldForFollowUps).toBe(0);
  });

  it('a moved reservation neither holds nor uses budget again', () => {
    const state = createThrottleState(settings(), T0);
    const at = granted(reserve(state, T0, 'submit'));
    confirm(state, T0 + 5_000, at, 'submit', undefined, true);
    expect(snapshot(state, T0 + 5_000).heldForFollowUps).toBe(1);
  });
});
