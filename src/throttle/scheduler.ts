// The throttle's scheduler: who gets a key's next permit. The windows (windows.ts) say when one
// more request fits; this module decides whose it is. A person's request (interactive) takes the
// next free slot and a reserve of each window that batch work never holds; batches share the rest
// by weight (tenants by their weight, then a tenant's batches by theirs), whatever their windows;
// tenants have budgets. Pure and workflow-safe like windows.ts: `now` is passed in, so hours of
// traffic run in milliseconds under test.
//
// Fair shares are start-time fair queuing on virtual times, with no queue in the throttle (its
// workflow answers every update at once): each batch requester has a virtual time that grows by
// 1/weight per permit; a batch request is granted only while its requester is less than a couple
// of permits ahead of the slowest requester that waits too, and only for a slot near now (its
// horizon). One that is not gets `retry` at the time its turn is likely: the requester's waiting
// requests come back spread at the pace its share of the key allows, so a batch with a window of
// 200 asks no more often than one with a window of 10. A requester that waits for nothing holds
// nothing (work conserving), and one that comes back after a pause starts level with the others
// (one whose requests were only told to come back later is not paused: see toldToWait).
import {
  OPERATOR_TENANT,
  interactiveRequester,
  requesterId,
  type RequestClass,
  type Requester,
} from '../contract/tenant.js';
import {
  batchHorizonFor,
  confirm,
  defaultFollowUps,
  effectiveAt,
  minuteReserveOf,
  rateLimited,
  reserve,
  type ClassCap,
  type PermitAnswer,
  type PermitKind,
  type RateLimitEvent,
  type ThrottleSettings,
  type ThrottleState,
} from './windows.js';
import {
  DEFAULT_POLICY,
  HOUR_RESERVE_MOST,
  type BudgetName,
  type RequesterRecord,
  type SchedulerPolicy,
  type SchedulerMode,
  type SchedulerState,
  type TenantPolicy,
  type WaitReason,
} from './scheduler-state.js';
import {
  countIn,
  dropAfter,
  dropThrough,
  insertSorted,
  removeOne,
  upperBound,
} from './sorted-times.js';

export {
  DEFAULT_POLICY,
  SCHEDULER_REVISION,
  DEFAULT_RESERVE,
  SCHEDULER_MODES,
  type RequesterRecord,
  type SchedulerMode,
  type SchedulerPolicy,
  type SchedulerState,
  type TenantPolicy,
} from './scheduler-state.js';

/** A permit request as the throttle receives it (see protocol.ts, PermitRequest). */
export interface PermitAsk {
  kind: PermitKind;
  confirmAt?: number;
  leadMs?: number;
  move?: boolean;
  followUps?: number;
  requester?: Requester;
  /** For a submit: the credits its job costs when found (a typical price of its price class). */
  credits?: number;
}

/** A batch may run this many of its own permits ahead of the slowest batch that waits too. */
const SLACK_PERMITS = 1;
/** A batch may be owed at most this many of its permits (its rows paused between polls). */
const LAG_PERMITS = 4;
/**
 * Waiting requests come back a little faster than their share alone would bring them, so a turn
 * is never missed for want of a request: the eligibility rule, not the spacing, divides the slots.
 */
const TURN_PACE = 0.75;
/** Revision 3: batch work under contention is paced over spans of this many minute windows. */
const PACE_MINUTES = 5;
/**
 * Revision 4: the pace is this much above the hour's even part. Requests come back a little after
 * the slot that frees and turns are taken late, so a pace of exactly the even part gave less than
 * it (about 90% in the shared-pool bench) and a span that fell short was never made up; the hour
 * window still bounds what the hour holds.
 */
const PACE_SLACK = 0.2;
/** Waiting requests tracked per requester (beyond it the count shows as at least this many). */
const MAX_WAITING = 1_000;
/** A day of the budgets: 24 hour windows of the time scale. */
const HOURS_A_DAY = 24;

export function schedulerOf(state: ThrottleState, now: number): SchedulerState {
  state.scheduler ??= {
    policy: clonePolicy(DEFAULT_POLICY),
    since: now,
    batchLog: [],
    batchHeld: [],
    requesters: {},
    credits: {},
    counts: { fairShare: 0, budget: 0, refusedBudget: 0 },
  };
  return state.scheduler;
}

/** Adopts the workers' latest policy (as limits and timing are adopted). */
export function configurePolicy(state: ThrottleState, policy: SchedulerPolicy, now: number): void {
  schedulerOf(state, now).policy = clonePolicy(policy);
}

function clonePolicy(p: SchedulerPolicy): SchedulerPolicy {
  return {
    mode: p.mode,
    reserve: p.reserve,
    tenants: Object.fromEntries(Object.entries(p.tenants).map(([k, v]) => [k, { ...v }])),
    ...(p.unlisted ? { unlisted: { ...p.unlisted } } : {}),
    ...(p.revision !== undefined ? { revision: p.revision } : {}),
  };
}

/** Whether the policy's rules are at least `revision` (see SchedulerPolicy.revision). */
const hasRevision = (p: SchedulerPolicy, revision: number) => (p.revision ?? 1) >= revision;

const batchHorizonOf = (s: ThrottleSettings) => s.batchHorizonMs ?? batchHorizonFor(s.minuteMs);
/** How long a request told to come back at T still counts as coming: the gate's spread and a slow process. */
const graceOf = (s: ThrottleSettings) => Math.max(250, Math.round(s.minuteMs / 60));
/**
 * A batch that asked within this span competes for shares; one silent longer holds nothing. Half
 * a minute window, and never less than ten margins: round trips and a process's delays do not
 * shrink with the time scale, and a batch whose requests are on their way back is still waiting.
 */
const activeSpanOf = (s: ThrottleSettings) => Math.max(s.minuteMs / 2, 10 * s.marginMs);

/**
 * Answers one permit request: a new reservation or the confirmation of one. Interactive and
 * background requests reserve as before (never behind queued batch work, which holds only near
 * slots, and free to use the reserve); batch requests are admitted by fair share within the batch
 * cap; every class is checked against its tenant's budgets first.
 */
export function schedulePermit(
  state: ThrottleState,
  now: number,
  ask: PermitAsk,
  /** Shared by the requests of one update: see ReserveOptions.memo. */
  memo?: Map<string, { at: number; boundBy: WaitReason }>,
): PermitAnswer {
  const sched = schedulerOf(state, now);
  forgetPast(state, sched, now);
  const requester = ask.requester ?? interactiveRequester();
  const fresh = ask.confirmAt === undefined;
  const idle = idleBefore(state, sched, requester, now);
  const r = recordOf(state, sched, requester, now, fresh);
  const lead = ask.leadMs ?? state.settings.leadMs;
  if (!fresh) return confirmFor(state, sched, r, now, ask, lead);

  const overBudget = budgetAnswer(state, sched, r, now, ask.kind, ask.credits ?? 0);
  if (overBudget) return overBudget;
  const followUps = ask.followUps ?? defaultFollowUps(ask.kind);
  let answer: PermitAnswer;
  if (r.class !== 'batch') {
    answer = reserve(state, now, ask.kind, lead, followUps, true, memo ? { memo } : {});
  } else if (sched.policy.mode === 'first-come') {
    answer = reserve(state, now, ask.kind, lead, followUps, true, {
      cap: openCap(sched),
      ...(memo ? { memo } : {}),
    });
  } else {
    answer = fairBatchPermit(state, sched, r, idle, now, ask.kind, lead, followUps, memo);
  }
  if (answer.kind === 'granted')
    noteGrant(sched, r, answer.at, ask.kind, ask.credits ?? 0, state.settings.hourMs);
  else if (answer.kind === 'retry') noteWait(r, answer.retryAt, answer.reason);
  return answer;
}

/** Whether the requester, and any batch of its tenant, asked within the active span before now. */
function idleBefore(
  state: ThrottleState,
  sched: SchedulerState,
  requester: Requester,
  now: number,
): { batch: boolean; tenant: boolean } {
  const active = now - activeSpanOf(state.settings);
  const present = (x: RequesterRecord) => x.seenAt >= active || toldToWait(state, sched, x, now);
  const mine = sched.requesters[requesterId(requester)];
  let tenantPresent = false;
  for (const x of Object.values(sched.requesters))
    if (x.class === 'batch' && x.tenant === requester.tenant && present(x)) tenantPresent = true;
  return { batch: !(mine && present(mine)), tenant: !tenantPresent };
}

/** The service answered 429: the windows close (windows.ts) and the dropped reservations leave every log. */
export function scheduleRateLimited(
  state: ThrottleState,
  now: number,
  retryAfterMs: number | undefined,
): RateLimitEvent {
  const event = rateLimited(state, now, retryAfterMs);
  const sched = state.scheduler;
  if (sched) {
    // rateLimited keeps exactly the reservations up to a time: every later one left the log.
    const last = state.log.length > 0 ? state.log[state.log.length - 1] : -Infinity;
    dropAfter(sched.batchLog, last);
    for (const r of Object.values(sched.requesters)) dropAfter(r.grants, last);
  }
  return event;
}

function fairBatchPermit(
  state: ThrottleState,
  sched: SchedulerState,
  r: RequesterRecord,
  idle: { batch: boolean; tenant: boolean },
  now: number,
  kind: PermitKind,
  lead: number,
  followUps: number,
  memo: Map<string, { at: number; boundBy: WaitReason }> | undefined,
): PermitAnswer {
  const s = state.settings;
  const cap = batchCap(state, sched, now);
  const others = contenders(state, sched, r, now);
  const paced = others.length > 0 || contenders(state, sched, r, now, true).length > 0;
  if (paced && hasRevision(sched.policy, 3))
    cap.pace = paceOf(state, cap, hasRevision(sched.policy, 4) ? PACE_SLACK : 0);
  const tw = tenantWeight(sched.policy, r.tenant);
  const clocks = (sched.tenantClocks ??= {});
  // Two levels: the asker's tenant against the other tenants whose batches wait, then the batch
  // against its tenant's other waiting batches; each clock advances by 1/weight per permit.
  let tenantLevel = Infinity;
  let batchLevel = Infinity;
  for (const x of others) {
    if (x.tenant === r.tenant) batchLevel = Math.min(batchLevel, x.vt);
    else tenantLevel = Math.min(tenantLevel, clocks[x.tenant] ?? 0);
  }
  // Idle time buys no share: a batch (or tenant) silent for a while rejoins level with the others;
  // one whose rows only paused between polls keeps what it is owed, a few permits' worth at most.
  const lift = (clock: number, level: number, weight: number, wasIdle: boolean) =>
    level === Infinity ? clock : Math.max(clock, wasIdle ? level : level - LAG_PERMITS / weight);
  r.vt = lift(r.vt, batchLevel, r.weight, idle.batch);
  clocks[r.tenant] = lift(clocks[r.tenant] ?? 0, tenantLevel, tw, idle.tenant);
  const ahead = (clock: number, level: number, weight: number) =>
    level !== Infinity && clock - level >= SLACK_PERMITS / weight;
  const answer = reserve(state, now, kind, lead, followUps, true, {
    horizonMs: lead + batchHorizonOf(s),
    cap,
    ...(memo ? { memo } : {}),
    admit: () =>
      ahead(clocks[r.tenant], tenantLevel, tw) || ahead(r.vt, batchLevel, r.weight)
        ? 'fair_share'
        : undefined,
  });
  if (answer.kind === 'granted') {
    r.vt += 1 / r.weight;
    clocks[r.tenant] += 1 / tw;
    return answer;
  }
  if (answer.kind !== 'retry') return answer;
  if (answer.reason === 'fair_share') sched.counts.fairShare += 1;
  // Its turn: spread after the others' at the pace its share of what batch work may send allows.
  // (Refused by the share rule, the answer is for now; held by the pace, for its paced slot.)
  const refusedNow = answer.reason === 'fair_share' && answer.retryAt <= now;
  const ready = refusedNow ? now : answer.retryAt;
  const rate = batchRatePerMs(state, sched, cap, Math.max(now, ready));
  const share = shareOf(sched.policy, r, others);
  const interval = Math.min(s.minuteMs + s.marginMs, TURN_PACE / (rate * share));
  const first = refusedNow ? now + interval : ready;
  const retryAt = Math.max(first, r.nextTurnAt);
  r.nextTurnAt = retryAt + interval;
  return { ...answer, retryAt: Math.round(retryAt) };
}

/**
 * Revision 3: while several batches wait on the key, batch work takes its hour evenly, at most the
 * hour's part of its limit in any span of PACE_MINUTES minute windows. Spent at the minute window's
 * pace, the hour went in its first minutes, and a batch whose rows could not keep up with that
 * pace (a narrow window, slow jobs) got less than its share, then nothing until the hour slid. A
 * batch alone on the key is not paced (work conserving); the hour window bounds it as before.
 * Revision 4 paces `slack` above the even part (PACE_SLACK): at the even part itself, every span
 * that fell short was lost for good (the shared-pool bench used 95.5% of the pool).
 */
function paceOf(
  state: ThrottleState,
  cap: ClassCap,
  slack: number,
): { spanMs: number; limit: number } {
  const s = state.settings;
  const spanMs = PACE_MINUTES * (s.minuteMs + s.marginMs);
  const hourSpan = s.hourMs + s.marginMs;
  const part = (cap.hourLimit * spanMs) / hourSpan;
  return { spanMs, limit: Math.max(1, Math.ceil(part * (1 + slack))) };
}

/** The asker's part of what batch work gets while `others` wait too: its tenant's, then its own. */
function shareOf(policy: SchedulerPolicy, r: RequesterRecord, others: RequesterRecord[]): number {
  const tenants = new Map<string, number>([[r.tenant, tenantWeight(policy, r.tenant)]]);
  let mine = r.weight;
  for (const x of others) {
    tenants.set(x.tenant, tenantWeight(policy, x.tenant));
    if (x.tenant === r.tenant) mine += x.weight;
  }
  let all = 0;
  for (const w of tenants.values()) all += w;
  return (tenantWeight(policy, r.tenant) / all) * (r.weight / mine);
}

/**
 * What batch work may hold: the minute window less the reserve, and an hour reserve that follows
 * what interactive and background requests used in the last hour: at least the minute reserve's
 * count, at most the configured share. So a person's request always finds a slot in the minute
 * window, and in the hour window at least that count beyond last hour's demand, while batch work
 * may use nearly all of an hour nobody else wants.
 */
function batchCap(state: ThrottleState, sched: SchedulerState, now: number): ClassCap {
  const share = sched.policy.reserve;
  const eff = effectiveAt(state, now);
  return {
    log: sched.batchLog,
    held: sched.batchHeld,
    minuteReserveShare: share,
    hourLimit: Math.max(1, eff.hour - hourReserveAt(state, sched, now)),
  };
}

/**
 * The hour window's reserve at `now`: the minute reserve's count beyond what interactive and
 * background requests used in the last hour span, at most the configured share; the configured
 * share in full until the scheduler has seen a whole hour (nothing is known of their demand yet).
 */
function hourReserveAt(state: ThrottleState, sched: SchedulerState, now: number): number {
  const s = state.settings;
  const hourSpan = s.hourMs + s.marginMs;
  const { floor, ceiling } = hourReserveBounds(state, sched.policy.reserve);
  const firstHour = now - sched.since < hourSpan;
  const all = countIn(state.log, now - hourSpan, Infinity);
  const batch = countIn(sched.batchLog, now - hourSpan, Infinity);
  const used = floor + Math.max(0, all - batch);
  if (!hasRevision(sched.policy, 2)) return firstHour ? ceiling : Math.min(ceiling, used);
  // Revision 2: the reserve follows what calls and background reads used in the last hour and
  // what of theirs waits now, beyond the configured share up to half the hour: a person's call
  // then finds its slot in the hour window however busy the batches, and a demand that grows
  // takes slots back from batch work as they come free instead of waiting behind it.
  let waiting = 0;
  for (const x of Object.values(sched.requesters))
    if (x.class !== 'batch') waiting += x.waiting.length;
  const most = Math.max(ceiling, hourReserveBounds(state, HOUR_RESERVE_MOST).ceiling);
  if (!firstHour) return Math.min(most, used + waiting);
  // In the first hour, what they used so far at the pace they used it up to their last request
  // (over five minutes at least, so a few early calls do not stop the batches): batch work that
  // fills the hour in its first minutes would otherwise leave a person's later calls waiting for
  // the hour to slide. Measured to their last request, it moves only when they ask: a throttle
  // nobody asks shows the same reserve to every reader.
  const minuteSpan = s.minuteMs + s.marginMs;
  const elapsed = Math.max(lastOtherThan(state.log, sched.batchLog) - sched.since, 5 * minuteSpan);
  const projected = floor + Math.ceil(((all - batch) * hourSpan) / elapsed);
  return Math.min(most, Math.max(ceiling, projected + waiting));
}

/** The time of the last reservation in `log` that `subset` (sorted, drawn from it) does not hold. */
function lastOtherThan(log: number[], subset: number[]): number {
  let j = subset.length - 1;
  for (let i = log.length - 1; i >= 0; i--) {
    if (j >= 0 && subset[j] === log[i]) j--;
    else return log[i];
  }
  return -Infinity;
}

function hourReserveBounds(
  state: ThrottleState,
  share: number,
): { floor: number; ceiling: number } {
  // From the configured limits: a limit learned lower after a 429 moves neither bound.
  const floor = minuteReserveOf(state.settings.limits.perMinute, share);
  const hour = state.settings.limits.perHour;
  const ceiling = Math.min(hour - 1, Math.max(floor, Math.floor(hour * share)));
  return { floor: Math.max(0, Math.min(floor, ceiling)), ceiling: Math.max(0, ceiling) };
}

/** First-come: batch reservations are tracked (for the status) but capped by nothing more. */
const openCap = (sched: SchedulerState): ClassCap => ({
  log: sched.batchLog,
  held: sched.batchHeld,
  minuteReserveShare: 0,
  hourLimit: Infinity,
});

/**
 * The other batches competing now: those with requests waiting that asked lately (a batch paused
 * or gone stops holding the others back at once; with `told`, from revision 5, one whose requests
 * were told to come back later counts for a pace span more, see toldToWait). One that gets all it
 * asks for waits for nothing, and so holds nobody back; one held by its tenant's budget waits for
 * the budget.
 */
function contenders(
  state: ThrottleState,
  sched: SchedulerState,
  asker: RequesterRecord,
  now: number,
  told = false,
): RequesterRecord[] {
  const active = now - activeSpanOf(state.settings);
  return Object.values(sched.requesters).filter(
    (x) =>
      x !== asker &&
      x.class === 'batch' &&
      x.waiting.length > 0 &&
      (x.seenAt >= active || (told && toldToWait(state, sched, x, now))) &&
      x.reason !== 'budget',
  );
}

/**
 * Revision 5: a batch whose requests were told to come back later still waits, though it has not
 * asked within the active span: the others are paced for it (`told`), and it is not idle when it
 * comes back. Before, one whose turns came further apart than the active span (a few rows a key,
 * its requests spread at its share's pace) dropped out between its turns: the widest batch then
 * ran unpaced and took the hour while the others waited for their turns. Only for as long as a
 * pace span since it last asked (a live batch's turns come at most a minute window apart, a
 * paced slot at most a span): a batch cancelled, or whose worker died, with turns still ahead
 * stops pacing the others after that. Not while its tenant's budget holds it. Shares are still
 * settled between the batches that asked lately, so the levels never hold a slot for one that
 * comes back only later (the pace may, for that span).
 */
function toldToWait(
  state: ThrottleState,
  sched: SchedulerState,
  x: RequesterRecord,
  now: number,
): boolean {
  if (!hasRevision(sched.policy, 5) || x.waiting.length === 0 || x.reason === 'budget')
    return false;
  const s = state.settings;
  return x.seenAt >= now - PACE_MINUTES * (s.minuteMs + s.marginMs) - graceOf(s);
}

const tenantWeight = (p: SchedulerPolicy, tenant: string) => p.tenants[tenant]?.weight ?? 1;

function tenantBudget(p: SchedulerPolicy, tenant: string): TenantPolicy | undefined {
  return p.tenants[tenant] ?? (tenant === OPERATOR_TENANT ? undefined : p.unlisted);
}

/**
 * Batch requests the key can grant per ms around `at`: what the minute window allows batch work,
 * or, once its hour is spent, what leaves the hour window in the next minute.
 */
function batchRatePerMs(
  state: ThrottleState,
  sched: SchedulerState,
  cap: ClassCap,
  at: number,
): number {
  const s = state.settings;
  const minuteSpan = s.minuteMs + s.marginMs;
  const hourSpan = s.hourMs + s.marginMs;
  const eff = effectiveAt(state, at);
  const minuteCap = eff.minute - minuteReserveOf(eff.minute, cap.minuteReserveShare);
  const inHour = countIn(sched.batchLog, at - hourSpan, Infinity);
  const leaving = countIn(sched.batchLog, at - hourSpan, at - hourSpan + minuteSpan);
  const perMinute = Math.max(1, Math.min(minuteCap, Math.max(0, cap.hourLimit - inHour) + leaving));
  const paced = cap.pace ? (cap.pace.limit * minuteSpan) / cap.pace.spanMs : Infinity;
  return Math.min(perMinute, paced) / minuteSpan;
}

/**
 * A tenant over a budget: new work is refused when a person waits for it (interactive) and held
 * until the budget frees otherwise. Polls and page reads of jobs already accepted are never
 * stopped: the job may be charged, and it must be read.
 */
function budgetAnswer(
  state: ThrottleState,
  sched: SchedulerState,
  r: RequesterRecord,
  now: number,
  kind: PermitKind,
  credits: number,
): PermitAnswer | undefined {
  if (kind === 'poll' || kind === 'page') return undefined;
  const budget = tenantBudget(sched.policy, r.tenant);
  if (!budget) return undefined;
  const s = state.settings;
  let over: { budget: BudgetName; until: number } | undefined;
  if (budget.requestsPerHour !== undefined) {
    const hourSpan = s.hourMs + s.marginMs;
    const times = tenantGrants(sched, r.tenant, now - hourSpan);
    const excess = times.length + 1 - Math.floor(budget.requestsPerHour);
    if (excess > 0)
      over = {
        budget: 'requests_per_hour',
        until: (times[Math.min(excess, times.length) - 1] ?? now) + hourSpan,
      };
  }
  if (!over && kind === 'submit' && credits > 0 && budget.creditsPerDay !== undefined) {
    const buckets = sched.credits[r.tenant] ?? [];
    let spent = buckets.reduce((a, [, c]) => a + c, 0);
    if (spent + credits > budget.creditsPerDay) {
      // Frees as the day's oldest hours leave it.
      let until = now + HOURS_A_DAY * s.hourMs;
      for (const [start, c] of buckets) {
        spent -= c;
        if (spent + credits <= budget.creditsPerDay) {
          until = start + s.hourMs + HOURS_A_DAY * s.hourMs;
          break;
        }
      }
      over = { budget: 'credits_per_day', until };
    }
  }
  if (!over) return undefined;
  r.budget = over.budget;
  if (r.class === 'interactive') {
    sched.counts.refusedBudget += 1;
    return { kind: 'refused', code: 'tenant_budget', budget: over.budget, until: over.until };
  }
  sched.counts.budget += 1;
  const retryAt = Math.max(now + 1, over.until);
  noteWait(r, retryAt, 'budget');
  return { kind: 'retry', retryAt, reason: 'budget', budget: over.budget };
}

/** The tenant's reservations after `from`, every requester of it together, sorted. */
function tenantGrants(sched: SchedulerState, tenant: string, from: number): number[] {
  const times: number[] = [];
  for (const x of Object.values(sched.requesters))
    if (x.tenant === tenant)
      for (let i = upperBound(x.grants, from); i < x.grants.length; i++) times.push(x.grants[i]);
  return times.sort((a, b) => a - b);
}

function confirmFor(
  state: ThrottleState,
  sched: SchedulerState,
  r: RequesterRecord,
  now: number,
  ask: PermitAsk,
  lead: number,
): PermitAnswer {
  const at = ask.confirmAt!;
  const fair = sched.policy.mode === 'fair';
  const options =
    r.class !== 'batch'
      ? {}
      : fair
        ? { cap: batchCap(state, sched, now), horizonMs: lead + batchHorizonOf(state.settings) }
        : { cap: openCap(sched) };
  const answer = confirm(state, now, at, ask.kind, lead, ask.move === true, options);
  const kept = answer.kind === 'granted' && answer.at === at;
  if (!kept) removeOne(r.grants, at);
  if (answer.kind === 'granted' && !kept) insertSorted(r.grants, answer.at);
  if (answer.kind === 'retry') noteWait(r, answer.retryAt, answer.reason);
  return answer;
}

function recordOf(
  state: ThrottleState,
  sched: SchedulerState,
  requester: Requester,
  now: number,
  fresh: boolean,
): RequesterRecord {
  const id = requesterId(requester);
  let r = sched.requesters[id];
  if (!r) {
    r = {
      class: requester.class,
      tenant: requester.tenant,
      weight: requester.weight ?? 1,
      vt: 0,
      grants: [],
      seenAt: now,
      waiting: [],
      nextTurnAt: 0,
    };
    sched.requesters[id] = r;
  }
  r.class = requester.class;
  if (requester.weight !== undefined) r.weight = requester.weight;
  r.seenAt = now;
  // A request due back from a wait it was told: one fewer waiting.
  if (fresh && r.waiting.length > 0 && r.waiting[0] <= now + graceOf(state.settings))
    r.waiting.shift();
  if (r.waiting.length === 0) {
    delete r.reason;
    delete r.budget;
  }
  return r;
}

function noteGrant(
  sched: SchedulerState,
  r: RequesterRecord,
  at: number,
  kind: PermitKind,
  credits: number,
  hourMs: number,
): void {
  insertSorted(r.grants, at);
  if (kind !== 'submit' || !(credits > 0)) return;
  // The hour window (of the time scale) the job is charged in: the day's budget counts by them.
  const buckets = (sched.credits[r.tenant] ??= []);
  const hourStart = Math.floor(at / hourMs) * hourMs;
  const last = buckets[buckets.length - 1];
  if (last && last[0] === hourStart) last[1] += credits;
  else buckets.push([hourStart, credits]);
}

function noteWait(r: RequesterRecord, retryAt: number, reason: WaitReason): void {
  insertSorted(r.waiting, retryAt);
  if (r.waiting.length > MAX_WAITING) r.waiting.pop();
  r.reason = reason;
  if (reason !== 'budget') delete r.budget;
}

/** Drops what no window (or day) can see any more, and requesters gone for an hour span. */
function forgetPast(state: ThrottleState, sched: SchedulerState, now: number): void {
  const s = state.settings;
  const oldest = now - s.hourMs - s.marginMs;
  dropThrough(sched.batchLog, oldest);
  dropThrough(sched.batchHeld, now);
  const grace = graceOf(s);
  for (const [id, r] of Object.entries(sched.requesters)) {
    dropThrough(r.grants, oldest);
    dropThrough(r.waiting, now - grace);
    if (r.waiting.length === 0) {
      delete r.reason;
      delete r.budget;
    }
    if (r.grants.length === 0 && r.waiting.length === 0 && r.seenAt <= oldest)
      delete sched.requesters[id];
  }
  const tenantsLeft = new Set(Object.values(sched.requesters).map((r) => r.tenant));
  for (const tenant of Object.keys(sched.tenantClocks ?? {}))
    if (!tenantsLeft.has(tenant)) delete sched.tenantClocks![tenant];
  const dayStart = now - HOURS_A_DAY * s.hourMs;
  for (const [tenant, buckets] of Object.entries(sched.credits)) {
    while (buckets.length > 0 && buckets[0][0] + s.hourMs <= dayStart) buckets.shift();
    if (buckets.length === 0) delete sched.credits[tenant];
  }
}

export interface RequesterView {
  id: string;
  class: RequestClass;
  tenant: string;
  /** A batch's weight among its tenant's batches. */
  weight?: number;
  /** Its reservations in the last minute and hour (those ahead not counted). */
  minute: number;
  hour: number;
  /** Its part of the key's requests in those windows (0-1). */
  minuteShare: number;
  hourShare: number;
  /** Its requests told to come back later, and why. */
  waiting: number;
  reason?: WaitReason;
  budget?: BudgetName;
}

export interface TenantView {
  tenant: string;
  weight: number;
  /** Requests in the last hour span (those ahead counted) and its budget on this key. */
  hour: number;
  requestsPerHour?: number;
  /** Credits charged in the last day and its budget on this key. */
  creditsToday: number;
  creditsPerDay?: number;
}

export interface SchedulerSnapshot {
  mode: SchedulerMode;
  /** The reserve: what batch work leaves in each window, and what the others use of the window. */
  reserve: {
    share: number;
    minute: { kept: number; used: number };
    hour: { kept: number; used: number; floor: number; ceiling: number };
  };
  requesters: RequesterView[];
  tenants: TenantView[];
  counts: SchedulerState['counts'];
}

/** What operators see of the scheduler: shares, waits, the reserve, budgets left. */
export function schedulerSnapshot(state: ThrottleState, now: number): SchedulerSnapshot {
  const sched = schedulerOf(state, now);
  forgetPast(state, sched, now);
  const s = state.settings;
  const hourSpan = s.hourMs + s.marginMs;
  const minuteTotal = countIn(state.log, now - s.minuteMs, now);
  const hourTotal = countIn(state.log, now - s.hourMs, now);
  const fair = sched.policy.mode === 'fair';
  const eff = effectiveAt(state, now);
  const { floor, ceiling: shareCeiling } = hourReserveBounds(state, sched.policy.reserve);
  // Revision 2 lets the reserve follow calls' demand up to half the hour.
  const ceiling = hasRevision(sched.policy, 2)
    ? Math.max(shareCeiling, hourReserveBounds(state, HOUR_RESERVE_MOST).ceiling)
    : shareCeiling;
  const cap = batchCap(state, sched, now);
  const share = (n: number, of: number) => (of > 0 ? Math.round((n / of) * 1000) / 1000 : 0);
  const requesters = Object.entries(sched.requesters)
    .map(([id, r]): RequesterView => {
      const minute = countIn(r.grants, now - s.minuteMs, now);
      const hour = countIn(r.grants, now - s.hourMs, now);
      return {
        id,
        class: r.class,
        tenant: r.tenant,
        ...(r.class === 'batch' ? { weight: r.weight } : {}),
        minute,
        hour,
        minuteShare: share(minute, minuteTotal),
        hourShare: share(hour, hourTotal),
        waiting: r.waiting.length,
        ...(r.reason ? { reason: r.reason } : {}),
        ...(r.budget ? { budget: r.budget } : {}),
      };
    })
    .sort((a, b) => b.hour - a.hour || a.id.localeCompare(b.id));
  const tenantNames = new Set([
    ...Object.values(sched.requesters).map((r) => r.tenant),
    ...Object.keys(sched.credits),
  ]);
  const tenants = [...tenantNames].sort().map((tenant): TenantView => {
    const budget = tenantBudget(sched.policy, tenant);
    return {
      tenant,
      weight: tenantWeight(sched.policy, tenant),
      hour: tenantGrants(sched, tenant, now - hourSpan).length,
      ...(budget?.requestsPerHour !== undefined ? { requestsPerHour: budget.requestsPerHour } : {}),
      creditsToday: (sched.credits[tenant] ?? []).reduce((a, [, c]) => a + c, 0),
      ...(budget?.creditsPerDay !== undefined ? { creditsPerDay: budget.creditsPerDay } : {}),
    };
  });
  const batchMinute = countIn(sched.batchLog, now - s.minuteMs, now);
  const batchHour = countIn(sched.batchLog, now - s.hourMs, now);
  return {
    mode: sched.policy.mode,
    reserve: {
      share: fair ? sched.policy.reserve : 0,
      minute: {
        kept: fair ? minuteReserveOf(eff.minute, sched.policy.reserve) : 0,
        used: minuteTotal - batchMinute,
      },
      hour: {
        kept: fair ? eff.hour - cap.hourLimit : 0,
        used: hourTotal - batchHour,
        floor: fair ? floor : 0,
        ceiling: fair ? ceiling : 0,
      },
    },
    requesters,
    tenants,
    counts: { ...sched.counts },
  };
}
