// Mixed traffic on one key's throttle, simulated on an injected clock: batches whose rows submit,
// wait for their job and poll until it is done, each row asking for a permit before every request
// (and coming back when told to retry), and single calls a person waits on. Drives the pure
// scheduler exactly as the throttle workflow does, so hours of traffic run in a second.
import { requesterId, type Requester } from '../../../src/contract/tenant.js';
import {
  configurePolicy,
  scheduleRateLimited,
  schedulePermit,
  type PermitAsk,
  type SchedulerPolicy,
} from '../../../src/throttle/scheduler.js';
import {
  createThrottleState,
  type PermitAnswer,
  type PermitKind,
  type ThrottleSettings,
  type ThrottleState,
  type WaitReason,
} from '../../../src/throttle/windows.js';

export interface SimBatch {
  id: string;
  tenant?: string;
  weight?: number;
  /** Rows in flight at once. */
  window: number;
  /** Rows in all (default: more than the run can send). */
  rows?: number;
  startAt?: number;
  /** No new rows from then on; those in flight finish. */
  stopAt?: number;
  /** Nothing more from then on, not even the requests told to come back (cancelled, worker gone). */
  goneAt?: number;
}

export interface SimCalls {
  everyMs: number;
  tenant?: string;
  startAt?: number;
  /** The class of the calls' requests (default interactive). */
  class?: 'interactive' | 'background';
  /** Each call asks for this kind alone when set (a usage read), instead of a submit and polls. */
  only?: PermitKind;
}

export interface SimOptions {
  settings: ThrottleSettings;
  policy?: SchedulerPolicy;
  batches: SimBatch[];
  calls?: SimCalls[];
  /** A job is done this long after its submit was sent. */
  jobMs: number;
  /** Between a request and the row's next poll. */
  pollMs: number;
  /**
   * Each job's time and each poll's interval spread evenly by up to this part either side (0-1),
   * from a fixed seed: real jobs differ, and rows drift out of step (default 0: all alike).
   */
  spread?: number;
  durationMs: number;
  /**
   * A request told to retry comes back up to this late (spread from a fixed seed; default 100 ms):
   * the caller's trip to the throttle and back, a busy worker's event loop.
   */
  returnMs?: number;
  /** The answer's trip back to the caller (its lead). */
  leadMs?: number;
  /** 429s the simulated service answers at these times (the throttle learns of them). */
  rateLimitedAt?: { at: number; retryAfterMs: number }[];
  t0?: number;
}

export interface SentRequest {
  at: number;
  requester: string;
  class: Requester['class'];
  tenant: string;
  kind: PermitKind;
}

export interface CallRecord {
  startedAt: number;
  /** When its result was read, or undefined if refused or not done by the end. */
  doneAt?: number;
  /** Total time its requests waited for permits. */
  permitWaitMs: number;
  refused?: string;
}

export interface SimResult {
  state: ThrottleState;
  sent: SentRequest[];
  calls: CallRecord[];
  answers: Record<string, number>;
  /** The same per requester ("batch:a granted"). */
  byRequester: Record<string, number>;
  /** Every grant, its time and whether its caller could already be sending on it. */
  grants: { at: number; unconfirmed: boolean }[];
  /** Confirmations answered with another time or a refusal: the grant did not hold. */
  confirmsNotKept: number;
}

/** A min-heap of timed events. */
class Events {
  private heap: { at: number; seq: number; run: () => void }[] = [];
  private seq = 0;
  push(at: number, run: () => void): void {
    const h = this.heap;
    h.push({ at, seq: this.seq++, run });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(h[p], h[i])) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }
  pop(): { at: number; run: () => void } | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l], h[m])) m = l;
        if (r < h.length && this.less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }
  private less(a: { at: number; seq: number }, b: { at: number; seq: number }): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }
}

/** A deterministic spread (0..1) for the gate's retry jitter. */
function jitter(seed: { n: number }): number {
  seed.n = (seed.n * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed.n / 2_147_483_648;
}

export function simulate(o: SimOptions): SimResult {
  const t0 = o.t0 ?? 1_700_000_000_000;
  const lead = o.leadMs ?? 250;
  const state = createThrottleState(o.settings, t0);
  if (o.policy) configurePolicy(state, o.policy, t0);
  const events = new Events();
  const end = t0 + o.durationMs;
  const result: SimResult = {
    state,
    sent: [],
    calls: [],
    answers: {},
    byRequester: {},
    grants: [],
    confirmsNotKept: 0,
  };
  const seed = { n: 7 };
  const spreadSeed = { n: 11 };
  let now = t0;
  // Requests at the same instant share a memo, as the requests of one update do.
  let memo = new Map<string, { at: number; boundBy: WaitReason }>();
  let memoAt = now;
  const decide = (ask: PermitAsk) => {
    if (now !== memoAt) {
      memo = new Map();
      memoAt = now;
    }
    return schedulePermit(state, now, ask, memo);
  };

  /** Asks until a permit is granted and due; then `sent(at)`; `refused(code)` on a refusal. */
  const acquire = (
    requester: Requester,
    kind: PermitKind,
    sent: (at: number) => void,
    refused: (code: string) => void = () => undefined,
    gone: () => boolean = () => false,
  ) => {
    const handle = (answer: PermitAnswer, confirmedAt?: number) => {
      const key = answer.kind === 'retry' ? `retry:${answer.reason}` : answer.kind;
      result.answers[key] = (result.answers[key] ?? 0) + 1;
      const mine = `${requesterId(requester)} ${key}`;
      result.byRequester[mine] = (result.byRequester[mine] ?? 0) + 1;
      if (confirmedAt !== undefined && !(answer.kind === 'granted' && answer.at === confirmedAt))
        result.confirmsNotKept += 1;
      if (answer.kind === 'refused') return refused(answer.code);
      if (answer.kind === 'retry') {
        const at = Math.max(now, answer.retryAt) + jitter(seed) * (o.returnMs ?? 100);
        if (at < end) events.push(at, ask);
        return;
      }
      if (confirmedAt === undefined)
        result.grants.push({ at: answer.at, unconfirmed: !answer.confirm });
      if (answer.confirm) {
        events.push(Math.max(now, answer.at - lead), () =>
          handle(decide({ kind, requester, confirmAt: answer.at, leadMs: lead }), answer.at),
        );
        return;
      }
      events.push(answer.at, () => {
        result.sent.push({
          at: answer.at,
          requester: requesterId(requester),
          class: requester.class,
          tenant: requester.tenant,
          kind,
        });
        sent(answer.at);
      });
    };
    const ask = () => {
      if (!gone()) handle(decide({ kind, requester, leadMs: lead }));
    };
    ask();
  };

  for (const b of o.batches) {
    const requester: Requester = {
      class: 'batch',
      tenant: b.tenant ?? 'default',
      batchId: b.id,
      ...(b.weight !== undefined ? { weight: b.weight } : {}),
    };
    let started = 0;
    const stopAt = t0 + (b.stopAt ?? Infinity);
    const spread = (ms: number) =>
      o.spread ? ms * (1 + o.spread * (2 * jitter(spreadSeed) - 1)) : ms;
    const goneAt = t0 + (b.goneAt ?? Infinity);
    const gone = () => now >= goneAt;
    const row = () => {
      if (now >= stopAt || started >= (b.rows ?? Infinity)) return;
      started += 1;
      const jobMs = spread(o.jobMs);
      const noRefusal = () => undefined;
      acquire(
        requester,
        'submit',
        (submittedAt) => {
          const poll = () =>
            acquire(
              requester,
              'poll',
              (polledAt) => {
                if (polledAt >= submittedAt + jobMs) row();
                else events.push(polledAt + spread(o.pollMs), poll);
              },
              noRefusal,
              gone,
            );
          events.push(submittedAt + spread(o.pollMs), poll);
        },
        noRefusal,
        gone,
      );
    };
    events.push(t0 + (b.startAt ?? 0), () => {
      for (let i = 0; i < b.window; i++) row();
    });
  }

  for (const c of o.calls ?? []) {
    const requester: Requester = { class: c.class ?? 'interactive', tenant: c.tenant ?? 'default' };
    const call = () => {
      if (now >= end) return;
      const record: CallRecord = { startedAt: now, permitWaitMs: 0 };
      result.calls.push(record);
      const timed = (kind: PermitKind, then: (at: number) => void) => {
        const askedAt = now;
        acquire(
          requester,
          kind,
          (at) => {
            record.permitWaitMs += at - askedAt;
            then(at);
          },
          (code) => (record.refused = code),
        );
      };
      if (c.only) {
        timed(c.only, (at) => (record.doneAt = at));
      } else {
        timed('submit', (submittedAt) => {
          const poll = () =>
            timed('poll', (polledAt) => {
              if (polledAt >= submittedAt + o.jobMs) record.doneAt = polledAt;
              else events.push(polledAt + o.pollMs, poll);
            });
          events.push(submittedAt + o.pollMs, poll);
        });
      }
      events.push(now + c.everyMs, call);
    };
    events.push(t0 + (c.startAt ?? 0), call);
  }

  for (const r of o.rateLimitedAt ?? [])
    events.push(t0 + r.at, () => scheduleRateLimited(state, now, r.retryAfterMs));

  for (let e = events.pop(); e && e.at < end; e = events.pop()) {
    now = Math.max(now, e.at);
    e.run();
  }
  return result;
}

/** The most requests any window of `span` (x - span, x] holds. */
export function maxInWindow(times: number[], span: number): number {
  const t = [...times].sort((a, b) => a - b);
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < t.length; hi++) {
    while (t[lo] <= t[hi] - span) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

/** Each requester's part of the requests sent in [from, to). */
export function sharesIn(
  sent: SentRequest[],
  from: number,
  to: number,
  which: (r: SentRequest) => boolean = (r) => r.class === 'batch',
): Record<string, number> {
  const counts: Record<string, number> = {};
  let total = 0;
  for (const r of sent) {
    if (r.at < from || r.at >= to || !which(r)) continue;
    counts[r.requester] = (counts[r.requester] ?? 0) + 1;
    total += 1;
  }
  return Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, n / total]));
}

export const percentile = (values: number[], p: number): number => {
  const v = [...values].sort((a, b) => a - b);
  return v.length === 0 ? NaN : v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)];
};
