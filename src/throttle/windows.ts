// The throttle's pure core: one key's two sliding windows as a log of reservations, plus what a
// 429 or a 402 teaches it. No I/O and no clock: the caller passes `now`, so the throttle workflow
// can run it deterministically and the unit tests can drive it through hours in microseconds.
//
// A reservation is a time T at which one more request fits every window: counting every
// reservation in (x - span, x] for every x whose window holds T stays within the limit, where
// span = window + margin (the margin absorbs the jitter between T and the request's arrival).
// The caller sleeps until T and sends; reservations farther than the horizon are not made.
// Who gets a reservation (classes, shares, budgets) is the scheduler's part (scheduler.ts): it
// asks this module for fits within a class's cap and horizon.
import type { BudgetName, SchedulerState, WaitReason } from './scheduler-state.js';
import { countIn, indexOf, insertSorted, upperBound } from './sorted-times.js';

export const PERMIT_KINDS = ['submit', 'poll', 'page', 'usage', 'feedback'] as const;
export type PermitKind = (typeof PERMIT_KINDS)[number];

export interface WindowLimits {
  perMinute: number;
  perHour: number;
}

export interface ThrottleSettings {
  /** Configured limits; the effective ones may be lower while a learned limit recovers. */
  limits: WindowLimits;
  minuteMs: number;
  hourMs: number;
  /** Added to each window's span: covers the gap between a reservation and its arrival. */
  marginMs: number;
  /** Reservations farther ahead than this are not made: the caller asks again later. */
  horizonMs: number;
  /**
   * How far beyond its lead batch work is granted (the fair scheduler): short, so batches hold no
   * queue of reservations that a person's call or another batch would wait behind. Absent in
   * settings carried from before it existed: a twentieth of the minute window.
   */
  batchHorizonMs?: number;
  /**
   * Time between a grant and its send that a caller asks for when it does not say: the answer's
   * trip back to the caller. A grant is for now + lead, so every request is sent at the time the
   * log records, whether it waited or not (late answers are moved, see `confirm`).
   */
  leadMs: number;
  /** A reservation later than now + lead + this must be confirmed by the caller before it sends. */
  confirmAfterMs: number;
  /** Share of the minute window that polls leave to other kinds (submits, page reads, usage). */
  submitShare: number;
  /**
   * How long the hour-window budget held for an accepted job's follow-up request (its poll or
   * page read) stays held when none comes (a webhook delivered it, the job failed at once).
   * Absent in settings carried from before it existed: 30 minutes' worth of the time scale.
   */
  followUpTtlMs?: number;
  /** Slots closer than this to now go to whoever asks, polls included, so none is wasted. */
  submitShareLeadMs: number;
  /** Wait assumed for a 429 without Retry-After. */
  defaultRetryAfterMs: number;
  /** How many recent 429s the state keeps for operators. */
  recentLimit: number;
}

export interface RateLimitEvent {
  at: number;
  retryAfterMs?: number;
  /** Set when the 429 lowered an effective limit: which window and to what. */
  learned?: { window: 'minute' | 'hour'; limit: number };
}

export interface ThrottleState {
  settings: ThrottleSettings;
  /** Sorted reservation times (epoch ms) of the last hour span and the horizon ahead. */
  log: number[];
  effective: WindowLimits;
  /** When each effective limit last moved (lowered or raised), for the one-step-per-clean-window recovery. */
  adjustedAt: { minute: number; hour: number };
  closedUntil: number;
  closedReason?: string;
  /** Latest time of a grant its caller sends without confirming: a 429 cannot stop those. */
  lastUnconfirmedAt: number;
  /** After a closure, until this time the minute window allows half its limit. */
  easeUntil: number;
  breaker: { open: boolean; since?: number; reason?: string; resetAt?: number; resetBy?: string };
  recent429s: RateLimitEvent[];
  counts: Record<PermitKind, number> & { refused: number; retryLater: number; rateLimited: number };
  /**
   * Hour-window budget held for the follow-ups (polls, page reads) of submits granted: one
   * expiry time each, sorted. Submits fit only in what the hour leaves after them, so the jobs
   * already accepted (and maybe charged) are always read before new ones are sent. Absent in a
   * state carried from before it existed.
   */
  followUps?: number[];
  /** Who asked and got what: the scheduler's state. Absent in a state carried from before it. */
  scheduler?: SchedulerState;
}

export type { BudgetName, WaitReason } from './scheduler-state.js';

export type PermitAnswer =
  /**
   * Send at `at`; when `confirm` is set, confirm the reservation at `at` first (the key may close
   * meanwhile). `waitFor` names what holds a grant later than asked for: a full window or a closure.
   */
  | { kind: 'granted'; at: number; confirm: boolean; waitFor?: WaitReason }
  /** No reservation was made: ask again at `retryAt` (`budget`: which one, for reason `budget`). */
  | { kind: 'retry'; retryAt: number; reason: WaitReason; budget?: BudgetName }
  /** Refused until an operator acts. */
  | { kind: 'refused'; code: 'insufficient_credits'; since: number }
  /** The requester's tenant spent a budget: refused, not held, for work a person waits on. */
  | { kind: 'refused'; code: 'tenant_budget'; budget: BudgetName; until: number };

/** Defaults at a time scale of so many times faster than the service: 10 makes a "minute" of 6 s. */
export function defaultSettings(limits: WindowLimits, timeScale = 1): ThrottleSettings {
  const minuteMs = 60_000 / timeScale;
  const hourMs = 3_600_000 / timeScale;
  return {
    limits,
    minuteMs,
    hourMs,
    // Arrival jitter does not shrink with the time scale: keep an absolute floor.
    marginMs: Math.max(200, Math.round(minuteMs * 0.01)),
    horizonMs: minuteMs / 2,
    batchHorizonMs: batchHorizonFor(minuteMs),
    leadMs: 250,
    confirmAfterMs: 50,
    submitShare: 0.1,
    followUpTtlMs: 30 * minuteMs,
    submitShareLeadMs: Math.round(minuteMs * 0.05),
    defaultRetryAfterMs: minuteMs,
    recentLimit: 10,
  };
}

/** Batch work's horizon for a minute window: a twentieth of it (3 s at the real pace). */
export const batchHorizonFor = (minuteMs: number): number => Math.round(minuteMs / 20);

/** The settings that follow the time scale (window lengths and the spans derived from them). */
export const TIMING_SETTINGS = [
  'minuteMs',
  'hourMs',
  'marginMs',
  'horizonMs',
  'batchHorizonMs',
  'followUpTtlMs',
  'submitShareLeadMs',
  'defaultRetryAfterMs',
] as const;
export type ThrottleTiming = Pick<ThrottleSettings, (typeof TIMING_SETTINGS)[number]>;

export function timingOf(settings: ThrottleSettings): ThrottleTiming {
  const t: Partial<Record<(typeof TIMING_SETTINGS)[number], number>> = {};
  for (const k of TIMING_SETTINGS) if (settings[k] !== undefined) t[k] = settings[k];
  return t as ThrottleTiming;
}

/**
 * Adopts a caller's timing (workers restarted at another time scale). Reservations already in
 * the log stay and age out under the new windows. Answers whether anything changed.
 */
export function configureTiming(state: ThrottleState, timing: ThrottleTiming): boolean {
  if (!(timing.minuteMs > 0 && timing.hourMs >= timing.minuteMs)) return false;
  const changed = TIMING_SETTINGS.some(
    (k) => timing[k] !== undefined && timing[k] !== state.settings[k],
  );
  if (changed)
    state.settings = { ...state.settings, ...timingOf({ ...state.settings, ...timing }) };
  return changed;
}

export function createThrottleState(settings: ThrottleSettings, now: number): ThrottleState {
  validateLimits(settings.limits);
  return {
    settings,
    log: [],
    effective: { ...settings.limits },
    adjustedAt: { minute: now, hour: now },
    closedUntil: 0,
    lastUnconfirmedAt: 0,
    easeUntil: 0,
    breaker: { open: false },
    recent429s: [],
    followUps: [],
    counts: {
      submit: 0,
      poll: 0,
      page: 0,
      usage: 0,
      feedback: 0,
      refused: 0,
      retryLater: 0,
      rateLimited: 0,
    },
  };
}

function validateLimits(l: WindowLimits): void {
  if (
    !Number.isInteger(l.perMinute) ||
    l.perMinute < 1 ||
    !Number.isInteger(l.perHour) ||
    l.perHour < 1
  ) {
    throw new RangeError(
      `limits must be positive integers (got ${l.perMinute}/min, ${l.perHour}/h)`,
    );
  }
}

/** Adopts new configured limits (a worker restarted with other settings). A learned limit stays lower. */
export function configureLimits(state: ThrottleState, limits: WindowLimits): void {
  validateLimits(limits);
  const old = state.settings.limits;
  if (old.perMinute === limits.perMinute && old.perHour === limits.perHour) return;
  const follow = (eff: number, before: number, after: number) =>
    eff >= before ? after : Math.min(eff, after);
  state.effective = {
    perMinute: follow(state.effective.perMinute, old.perMinute, limits.perMinute),
    perHour: follow(state.effective.perHour, old.perHour, limits.perHour),
  };
  state.settings = { ...state.settings, limits: { ...limits } };
}

/** Follow-up requests a submit holds budget for when its caller does not say: one poll. */
export const defaultFollowUps = (kind: PermitKind): number => (kind === 'submit' ? 1 : 0);

/**
 * What a class of requests may hold beside the others (the scheduler's batch work): its own
 * reservations, counted against a lower limit in each window, so the rest of each window stays
 * free for the other classes.
 */
export interface ClassCap {
  /** The class's reservations, sorted: a subset of the log, kept in step by reserve and confirm. */
  log: number[];
  /** Share of the minute window the class leaves to the others (see minuteReserveOf). */
  minuteReserveShare: number;
  /** Most the class may hold in any hour span (submits also leave the class's holds free). */
  hourLimit: number;
  /** Hour-window budget held for the follow-ups of the class's submits, sorted by expiry. */
  held: number[];
  /**
   * At most `limit` of the class's reservations in any span of `spanMs`: its hour spread evenly
   * over the hour instead of spent at the minute window's pace (see scheduler.ts, paceOf).
   */
  pace?: { spanMs: number; limit: number };
}

export interface ReserveOptions {
  /** Reservations later than now + this are not made (default: the settings' horizon). */
  horizonMs?: number;
  cap?: ClassCap;
  /**
   * Called with the time found, before anything is recorded: a reason refuses it (the answer is
   * a retry with that reason, at `now`, for the caller to reschedule).
   */
  admit?: (at: number) => WaitReason | undefined;
  /**
   * Fits found too far ahead, shared by the requests of one update (one `now`): until a grant
   * changes the log, another request of the same kind, lead and class finds no earlier fit, so its
   * answer is the same without searching the log again. (A searched fit could only be earlier
   * after the log lost an entry, which grants never do: the memo can only delay, never over-grant.)
   */
  memo?: Map<string, { at: number; boundBy: WaitReason }>;
}

/** Requests of the minute window kept from a capped class: a share, at least one, none of a limit below 2. */
export function minuteReserveOf(limit: number, share: number): number {
  if (!(share > 0) || limit < 2) return 0;
  return Math.min(limit - 1, Math.max(1, Math.floor(limit * share)));
}

/**
 * Hands out the earliest time one more request of `kind` fits, and records it. A granted submit
 * holds hour-window budget for `followUps` later requests (its polls); a granted poll or page
 * read uses one such hold. `track` is off when a reservation only moves (see `confirm`).
 */
export function reserve(
  state: ThrottleState,
  now: number,
  kind: PermitKind,
  leadMs: number = state.settings.leadMs,
  followUps: number = defaultFollowUps(kind),
  track = true,
  options: ReserveOptions = {},
): PermitAnswer {
  prepare(state, now);
  if (state.breaker.open && kind === 'submit') {
    state.counts.refused += 1;
    return { kind: 'refused', code: 'insufficient_credits', since: state.breaker.since ?? now };
  }
  const s = state.settings;
  const horizonMs = options.horizonMs ?? s.horizonMs;
  const cap = options.cap;
  const held = state.followUps ?? [];
  const holds = kind === 'submit' ? followUps : 0;
  if (
    kind === 'submit' &&
    (held.length + holds >= effectiveAt(state, now).hour ||
      (cap !== undefined && cap.held.length + holds >= cap.hourLimit))
  ) {
    // Every request the hour allows is held for jobs already accepted: they go first.
    const first = cap && cap.held.length + holds >= cap.hourLimit ? cap.held[0] : held[0];
    state.counts.retryLater += 1;
    return {
      kind: 'retry',
      retryAt: Math.max(now + 1, Math.min(first ?? now + horizonMs, now + horizonMs)),
      reason: 'hour_window',
    };
  }
  const memoKey = options.memo
    ? [
        now,
        state.log.length,
        state.closedUntil,
        kind,
        leadMs,
        track ? holds : 0,
        horizonMs,
        cap ? cap.log.length : '-',
        cap?.pace ? `${cap.pace.spanMs}/${cap.pace.limit}` : '-',
      ].join('|')
    : undefined;
  const known = memoKey !== undefined ? options.memo!.get(memoKey) : undefined;
  const { at, boundBy } =
    known ?? earliestFit(state, now, kind, now + leadMs, track ? holds : 0, cap);
  if (at > now + horizonMs) {
    if (memoKey !== undefined && !known) options.memo!.set(memoKey, { at, boundBy });
    state.counts.retryLater += 1;
    return { kind: 'retry', retryAt: Math.max(now + 1, at - horizonMs), reason: boundBy };
  }
  const refusedBy = options.admit?.(at);
  if (refusedBy !== undefined) {
    state.counts.retryLater += 1;
    return { kind: 'retry', retryAt: now, reason: refusedBy };
  }
  insertSorted(state.log, at);
  if (cap) insertSorted(cap.log, at);
  state.counts[kind] += 1;
  if (track) {
    if (kind === 'submit' && followUps > 0) {
      const until = at + (s.followUpTtlMs ?? 30 * s.minuteMs);
      for (let i = 0; i < followUps; i++) {
        insertSorted(held, until);
        if (cap) insertSorted(cap.held, until);
      }
    } else if (kind === 'poll' || kind === 'page') {
      if (held.length > 0) held.shift();
      if (cap && cap.held.length > 0) cap.held.shift();
    }
    state.followUps = held;
  }
  const mustConfirm = at > now + leadMs + s.confirmAfterMs;
  if (!mustConfirm) state.lastUnconfirmedAt = Math.max(state.lastUnconfirmedAt, at);
  return {
    kind: 'granted',
    at,
    confirm: mustConfirm,
    ...(at > now + leadMs ? { waitFor: boundBy } : {}),
  };
}

/**
 * The caller of a reservation that needed confirming (or that reached it late) is about to send.
 * Granted at once unless the key closed (or its breaker opened) meanwhile; then the reservation
 * is dropped and the caller is told when to ask again. A reservation no longer in the log, or
 * one confirmed well after its time, is made afresh (within `options`' cap and horizon).
 */
export function confirm(
  state: ThrottleState,
  now: number,
  at: number,
  kind: PermitKind,
  leadMs: number = state.settings.leadMs,
  /** The caller knows it is late (its clock says so): move the reservation whatever ours says. */
  move = false,
  options: Omit<ReserveOptions, 'admit'> = {},
): PermitAnswer {
  prepare(state, now);
  const index = indexOf(state.log, at);
  // Dropping or moving the reservation takes it back from the counts; a new one counts again.
  const drop = () => {
    if (index < 0) return;
    state.log.splice(index, 1);
    const mine = options.cap ? indexOf(options.cap.log, at) : -1;
    if (mine >= 0) options.cap!.log.splice(mine, 1);
    state.counts[kind] = Math.max(0, state.counts[kind] - 1);
  };
  if (state.breaker.open && kind === 'submit') {
    drop();
    state.counts.refused += 1;
    return { kind: 'refused', code: 'insufficient_credits', since: state.breaker.since ?? now };
  }
  if (now < state.closedUntil) {
    drop();
    state.counts.retryLater += 1;
    return { kind: 'retry', retryAt: state.closedUntil, reason: 'closed' };
  }
  // A grant that reached its caller late (a slow answer) would be sent later than the log says,
  // beyond what the margin absorbs: move it to now, where the windows are checked again.
  if (index >= 0 && !move && now - at <= state.settings.marginMs / 2) {
    state.lastUnconfirmedAt = Math.max(state.lastUnconfirmedAt, at);
    return { kind: 'granted', at, confirm: false };
  }
  drop();
  // A moved reservation already holds (or used) its follow-up budget.
  return reserve(state, now, kind, leadMs, 0, false, options);
}

/**
 * The service answered 429 at `now`. The key closes for every caller until Retry-After has
 * passed, reservations not yet sent are dropped (their holders learn it when they confirm), and
 * if our log held fewer requests than the window allows, the service's real limit is lower:
 * the effective limit drops to what the log held before this request (at most halving). Further
 * 429s while the key is closed are the same event: they teach nothing more.
 */
export function rateLimited(
  state: ThrottleState,
  now: number,
  retryAfterMs: number | undefined,
): RateLimitEvent {
  prepare(state, now);
  const s = state.settings;
  const wait =
    retryAfterMs !== undefined && retryAfterMs >= 0 ? retryAfterMs : s.defaultRetryAfterMs;
  const event: RateLimitEvent = {
    at: now,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
  // A wait longer than the minute window can only come from the hour window.
  const window: 'minute' | 'hour' = wait > s.minuteMs + s.marginMs ? 'hour' : 'minute';
  const span = (window === 'minute' ? s.minuteMs : s.hourMs) + s.marginMs;
  // Requests already on their way (granted without confirmation) stay counted.
  const sentBy = Math.max(now + s.confirmAfterMs, state.lastUnconfirmedAt ?? 0);
  const inWindow = countIn(state.log, now - span, now);
  const limit = window === 'minute' ? state.effective.perMinute : state.effective.perHour;
  // The refused request is in the log: the service allowed at most the others. One 429 at most
  // halves the limit, so a stray one (another client on the key, an injected fault) cannot
  // collapse the rate; a limit really that low shows itself with the next 429.
  const observed = inWindow - 1;
  // A 429 while the key is already closed answers a request sent before the throttle heard of the
  // first one: the same event, seen again. It may lengthen the wait but teaches no new limit, or a
  // burst of requests in flight together would halve the limit once per request.
  const sameEvent = now < state.closedUntil;
  if (!sameEvent && observed < limit) {
    const learned = Math.max(1, observed, Math.ceil(limit / 2));
    if (window === 'minute') state.effective.perMinute = learned;
    else state.effective.perHour = learned;
    event.learned = { window, limit: learned };
  }
  const until = now + wait;
  if (until > state.closedUntil) {
    state.closedUntil = until;
    state.closedReason = `rate_limit_exceeded (429${retryAfterMs !== undefined ? `, Retry-After ${Math.round(wait)} ms` : ''})`;
  }
  // Clean windows, which raise a learned limit again, count from the reopening.
  state.adjustedAt[window] = Math.max(state.adjustedAt[window], state.closedUntil);
  state.easeUntil = Math.max(state.easeUntil, state.closedUntil + s.minuteMs);
  state.log = state.log.filter((t) => t <= sentBy);
  state.recent429s.push(event);
  if (state.recent429s.length > s.recentLimit)
    state.recent429s.splice(0, state.recent429s.length - s.recentLimit);
  state.counts.rateLimited += 1;
  return event;
}

/** The service answered 402 insufficient_credits: submits stop until an operator resets the breaker. */
export function creditsExhausted(state: ThrottleState, now: number): void {
  if (state.breaker.open) return;
  state.breaker = { open: true, since: now, reason: 'insufficient_credits (402)' };
}

/** An operator resumed: submits may go again. */
export function resetCredits(state: ThrottleState, now: number, by = 'operator'): boolean {
  const wasOpen = state.breaker.open;
  state.breaker = { open: false, resetAt: now, resetBy: by };
  return wasOpen;
}

export interface WindowUse {
  used: number;
  limit: number;
  configured: number;
  spanMs: number;
}

export interface ThrottleSnapshot {
  asOf: number;
  minute: WindowUse;
  hour: WindowUse;
  /** Callers holding a reservation for a later time. */
  waiting: number;
  /** Hour-window requests held for the polls of jobs already accepted. */
  heldForFollowUps: number;
  closedUntil?: number;
  closedReason?: string;
  easingUntil?: number;
  breaker: ThrottleState['breaker'];
  recent429s: RateLimitEvent[];
  counts: ThrottleState['counts'];
}

/** What operators see: windows as of `now`, closure, breaker and recent 429s. */
export function snapshot(state: ThrottleState, now: number): ThrottleSnapshot {
  const s = state.settings;
  const eff = effectiveAt(state, now);
  const use = (windowMs: number, limit: number, configured: number): WindowUse => ({
    used: countIn(state.log, now - windowMs, now),
    limit,
    configured,
    spanMs: windowMs,
  });
  return {
    asOf: now,
    minute: use(s.minuteMs, eff.minute, s.limits.perMinute),
    hour: use(s.hourMs, eff.hour, s.limits.perHour),
    waiting: countIn(state.log, now, Infinity),
    heldForFollowUps: (state.followUps ?? []).filter((t) => t > now).length,
    ...(state.closedUntil > now
      ? { closedUntil: state.closedUntil, closedReason: state.closedReason }
      : {}),
    ...(state.easeUntil > now && state.closedUntil <= now ? { easingUntil: state.easeUntil } : {}),
    breaker: { ...state.breaker },
    recent429s: state.recent429s.map((e) => ({ ...e })),
    counts: { ...state.counts },
  };
}

/** One line for the Web UI: used/limit per window, closure, breaker. */
export function summaryLine(snap: ThrottleSnapshot): string {
  const parts = [
    `minute ${snap.minute.used}/${snap.minute.limit}`,
    `hour ${snap.hour.used}/${snap.hour.limit}`,
    `waiting ${snap.waiting}`,
  ];
  if (snap.heldForFollowUps > 0) parts.push(`held for polls ${snap.heldForFollowUps}`);
  if (snap.minute.limit < snap.minute.configured || snap.hour.limit < snap.hour.configured)
    parts.push('learned limit');
  if (snap.closedUntil)
    parts.push(`closed until ${new Date(snap.closedUntil).toISOString()} (429)`);
  if (snap.breaker.open) parts.push('credit breaker OPEN: submits paused until resume');
  return parts.join(' | ');
}

// ---- internals ----

/** Drops reservations no window can see any more and lets learned limits recover. */
function prepare(state: ThrottleState, now: number): void {
  const s = state.settings;
  const oldest = now - s.hourMs - s.marginMs;
  if (state.log.length > 0 && state.log[0] <= oldest)
    state.log.splice(0, upperBound(state.log, oldest));
  const held = state.followUps;
  if (held && held.length > 0 && held[0] <= now) held.splice(0, upperBound(held, now));
  recover(state, now);
}

/** Additive recovery: each clean window (no 429) raises a learned limit by a step, up to the configured one. */
function recover(state: ThrottleState, now: number): void {
  const s = state.settings;
  const raise = (window: 'minute' | 'hour', spanMs: number, configured: number) => {
    const key = window === 'minute' ? 'perMinute' : 'perHour';
    const step = Math.max(1, Math.ceil(configured / 20));
    while (state.effective[key] < configured && now - state.adjustedAt[window] >= spanMs) {
      state.effective[key] = Math.min(configured, state.effective[key] + step);
      state.adjustedAt[window] += spanMs;
    }
  };
  raise('minute', s.minuteMs + s.marginMs, s.limits.perMinute);
  raise('hour', s.hourMs + s.marginMs, s.limits.perHour);
}

/** The limits in force at `t`: the learned ones, the minute's halved while the key eases back in. */
export function effectiveAt(state: ThrottleState, t: number): { minute: number; hour: number } {
  const minute =
    t < state.easeUntil
      ? Math.max(1, Math.ceil(state.effective.perMinute / 2))
      : state.effective.perMinute;
  return { minute, hour: state.effective.perHour };
}

/** Limit a request of `kind` at time `t` may fill the minute window to (itself included). */
function limitFor(
  state: ThrottleState,
  limit: number,
  kind: PermitKind,
  t: number,
  now: number,
): number {
  const s = state.settings;
  if (kind !== 'poll' || limit < 2 || s.submitShare <= 0 || t <= now + s.submitShareLeadMs)
    return limit;
  return limit - Math.max(1, Math.floor(limit * s.submitShare));
}

function earliestFit(
  state: ThrottleState,
  now: number,
  kind: PermitKind,
  from: number,
  /** Follow-ups this request will hold: they must fit the hour beside it. */
  holds = 0,
  cap?: ClassCap,
): { at: number; boundBy: WaitReason } {
  const s = state.settings;
  const log = state.log;
  const minuteSpan = s.minuteMs + s.marginMs;
  const hourSpan = s.hourMs + s.marginMs;
  const start = Math.max(from, state.closedUntil);
  const held = state.followUps ?? [];
  /** Holds still live at `t` (a hold that expires before `t` frees its budget by then). */
  const heldAt = (list: number[], t: number) => list.length - upperBound(list, t);
  const fitsAt = (t: number): 'minute_window' | 'hour_window' | 'fair_share' | null => {
    const eff = effectiveAt(state, t);
    if (!fits(log, t, minuteSpan, limitFor(state, eff.minute, kind, t, now)))
      return 'minute_window';
    // The share is kept in the minute window only: kept in the hour window, it could hold polls
    // back for most of an hour once the hour's budget runs low. What submits leave in the hour
    // window is the other way round: the follow-ups of accepted jobs are held there for them.
    if (!fits(log, t, hourSpan, eff.hour - (kind === 'submit' ? heldAt(held, t) + holds : 0)))
      return 'hour_window';
    if (cap) {
      const classMinute = eff.minute - minuteReserveOf(eff.minute, cap.minuteReserveShare);
      if (!fits(cap.log, t, minuteSpan, limitFor(state, classMinute, kind, t, now)))
        return 'minute_window';
      const classHour = cap.hourLimit - (kind === 'submit' ? heldAt(cap.held, t) + holds : 0);
      if (!fits(cap.log, t, hourSpan, classHour)) return 'hour_window';
      // Paced only while other batches wait too: their shares are why.
      if (cap.pace && !fits(cap.log, t, cap.pace.spanMs, cap.pace.limit)) return 'fair_share';
    }
    return null;
  };
  let blocked = fitsAt(start);
  if (blocked === null) return { at: start, boundBy: start > now ? 'closed' : 'minute_window' };
  // Whether a time fits can only change for the better where a reservation leaves a window
  // (t = e + span), or where the ease-back period ends: those are the only candidates.
  const candidates: number[] = [];
  for (let i = upperBound(log, start - minuteSpan); i < log.length; i++)
    candidates.push(log[i] + minuteSpan);
  for (let i = upperBound(log, start - hourSpan); i < log.length; i++)
    candidates.push(log[i] + hourSpan);
  if (state.easeUntil > start) candidates.push(state.easeUntil);
  const pace = cap?.pace;
  if (pace)
    for (let i = upperBound(cap.log, start - pace.spanMs); i < cap.log.length; i++)
      candidates.push(cap.log[i] + pace.spanMs);
  if (kind === 'submit') {
    for (const t of held) if (t > start) candidates.push(t);
    if (cap) for (const t of cap.held) if (t > start) candidates.push(t);
  }
  candidates.sort((a, b) => a - b);
  let previous = start;
  for (const t of candidates) {
    if (t <= previous) continue;
    previous = t;
    const why = fitsAt(t);
    if (why === null) return { at: t, boundBy: blocked };
    blocked = why;
  }
  // Unreachable with limits ≥ 1: past the last candidate every window is empty.
  const last = candidates.length > 0 ? candidates[candidates.length - 1] : start;
  return { at: last, boundBy: blocked };
}

/** Whether one more reservation at `t` keeps every window of `span` holding `t` within `limit`. */
function fits(log: number[], t: number, span: number, limit: number): boolean {
  const countEndingAt = (x: number) => upperBound(log, x) - upperBound(log, x - span);
  if (countEndingAt(t) + 1 > limit) return false;
  // Windows ending at later reservations also hold t while they are less than a span away.
  for (let j = upperBound(log, t); j < log.length && log[j] < t + span; j++) {
    if (countEndingAt(log[j]) + 1 > limit) return false;
  }
  return true;
}
