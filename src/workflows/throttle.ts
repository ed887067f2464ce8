// One key's throttle, shared by every worker process: a long-lived workflow that owns the key's
// reservation log (src/throttle/windows.ts) and its scheduler (src/throttle/scheduler.ts: who
// goes next, shares, budgets), and answers permit updates at once, never blocking inside a
// handler (a workflow holds at most ten updates in flight). It continues-as-new with its state,
// so it survives worker restarts and keeps its history short.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { PcdsState } from '../temporal/search-attributes.js';
import {
  REQUEST_CLASSES,
  tenantIdProblem,
  weightProblem,
  type RequestClass,
  type Requester,
} from '../contract/tenant.js';
import {
  creditsExhaustedUpdate,
  MAX_PERMIT_BATCH,
  permitsUpdate,
  rateLimitedUpdate,
  resetCreditsSignal,
  resetCreditsUpdate,
  throttleStateQuery,
  type PermitBatch,
  type ThrottleInput,
  type ThrottleStatus,
} from '../throttle/protocol.js';
import { formatThrottleStatus } from '../throttle/status-text.js';
import {
  configurePolicy,
  SCHEDULER_MODES,
  scheduleRateLimited,
  schedulePermit,
  schedulerSnapshot,
  type SchedulerMode,
  type SchedulerPolicy,
} from '../throttle/scheduler.js';
import {
  configureLimits,
  configureTiming,
  confirm,
  createThrottleState,
  creditsExhausted,
  defaultFollowUps,
  PERMIT_KINDS,
  rateLimited,
  reserve,
  resetCredits,
  snapshot,
  summaryLine,
  type PermitKind,
  type ThrottleState,
  type WaitReason,
} from '../throttle/windows.js';

/** Well under the 51,200-event limit, so replay after a worker restart stays quick. */
const HISTORY_EVENTS_BEFORE_CONTINUE = 5_000;
const KINDS: ReadonlySet<string> = new Set<PermitKind>(PERMIT_KINDS);

export async function pcdsKeyThrottle(input: ThrottleInput): Promise<void> {
  const state = input.state ?? createThrottleState(input.settings, Date.now());
  // Runs recorded before the scheduler answered first come, first served and knew no requester;
  // they replay on that path. A state they carried on continues here with no requester data yet.
  const scheduling = patched('throttle-scheduler');
  const statusAt = (now: number): ThrottleStatus => ({
    keyId: input.keyId,
    settings: {
      minuteMs: state.settings.minuteMs,
      hourMs: state.settings.hourMs,
      marginMs: state.settings.marginMs,
      horizonMs: state.settings.horizonMs,
      submitShare: state.settings.submitShare,
    },
    snapshot: snapshot(state, now),
    ...(scheduling ? { scheduler: schedulerSnapshot(state, now) } : {}),
  });
  // The Web UI's details are the text `pcds throttle status` prints, refreshed while what it
  // shows changes with time (see refreshDelayMs). Runs of 0.1.x kept one line, set on messages only.
  const sameAsCli = patched('throttle-details-as-cli');
  let published = 0;
  const publish = () => {
    published += 1;
    setCurrentDetails(
      sameAsCli ? detailsText(statusAt(Date.now())) : summaryLine(snapshot(state, Date.now())),
    );
  };
  const markBreaker = () =>
    upsertSearchAttributes([
      { key: PcdsState, value: state.breaker.open ? 'credits_paused' : 'open' },
    ]);
  const reset = (by: string | undefined) => {
    const wasOpen = resetCredits(state, Date.now(), by ?? 'operator');
    if (wasOpen) markBreaker();
    publish();
    return { wasOpen };
  };

  setHandler(
    permitsUpdate,
    (batch: PermitBatch) => {
      if (batch.limits) configureLimits(state, batch.limits);
      // Only senders of this release carry `timing`, so replaying older histories takes the same path.
      if (batch.timing) configureTiming(state, batch.timing);
      const now = Date.now();
      if (scheduling && batch.policy) configurePolicy(state, batch.policy, now);
      const memo = new Map<string, { at: number; boundBy: WaitReason }>();
      const answers = batch.requests.map((r) =>
        scheduling
          ? schedulePermit(state, now, r, memo)
          : r.confirmAt !== undefined
            ? confirm(state, now, r.confirmAt, r.kind, r.leadMs, r.move === true)
            : reserve(state, now, r.kind, r.leadMs, r.followUps ?? defaultFollowUps(r.kind)),
      );
      publish();
      return answers;
    },
    { validator: validatePermitBatch },
  );
  setHandler(
    rateLimitedUpdate,
    ({ retryAfterMs }) => {
      const event = (scheduling ? scheduleRateLimited : rateLimited)(
        state,
        Date.now(),
        retryAfterMs,
      );
      publish();
      return event;
    },
    {
      validator: ({ retryAfterMs }) => {
        if (retryAfterMs !== undefined && !(Number.isFinite(retryAfterMs) && retryAfterMs >= 0)) {
          throw new TypeError('retryAfterMs must be a non-negative number of milliseconds');
        }
      },
    },
  );
  setHandler(creditsExhaustedUpdate, () => {
    const wasOpen = state.breaker.open;
    creditsExhausted(state, Date.now());
    if (!wasOpen) markBreaker();
    publish();
  });
  setHandler(resetCreditsUpdate, ({ by }) => reset(by));
  setHandler(resetCreditsSignal, ({ by }) => void reset(by));
  setHandler(throttleStateQuery, (now?: number) => statusAt(now ?? Date.now()));

  if (!input.state) markBreaker();
  publish();
  const mustContinue = () =>
    workflowInfo().continueAsNewSuggested ||
    workflowInfo().historyLength > HISTORY_EVENTS_BEFORE_CONTINUE;
  while (!mustContinue()) {
    if (!sameAsCli) {
      await condition(mustContinue);
      break;
    }
    const delay = refreshDelayMs(state, Date.now());
    if (delay === undefined) {
      // Nothing shown changes with time: sleep until a message changes it (no timer, no event).
      const seen = published;
      await condition(() => mustContinue() || published !== seen);
      continue;
    }
    if (await condition(mustContinue, delay)) break;
    publish();
  }
  await condition(allHandlersFinished);
  await continueAsNew<typeof pcdsKeyThrottle>({
    keyId: input.keyId,
    settings: state.settings,
    state,
  });
}

/** The details: the CLI's text, kept as one preformatted block (the Web UI renders Markdown). */
export function detailsText(status: ThrottleStatus): string {
  return ['```', formatThrottleStatus(status), '```'].join('\n');
}

/**
 * How soon the details go stale while nobody asks for permits: a twelfth of the minute window
 * (5 s) while the minute window holds requests, reservations wait or the key is closed or easing
 * back in; a minute window while only the hour window holds requests; never once both are empty.
 * Each refresh is a timer (two history events), so an idle throttle adds about 60 an hour.
 */
export function refreshDelayMs(state: ThrottleState, now: number): number | undefined {
  const s = snapshot(state, now);
  const minuteMs = state.settings.minuteMs;
  if (s.minute.used > 0 || s.waiting > 0 || s.closedUntil || s.easingUntil)
    return Math.max(1, Math.round(minuteMs / 12));
  if (s.hour.used > 0 || s.heldForFollowUps > 0) return minuteMs;
  return undefined;
}

function validatePermitBatch(batch: PermitBatch): void {
  if (!batch || !Array.isArray(batch.requests) || batch.requests.length === 0) {
    throw new TypeError('a permit batch needs a non-empty requests array');
  }
  if (batch.requests.length > MAX_PERMIT_BATCH) {
    throw new TypeError(`a permit batch holds at most ${MAX_PERMIT_BATCH} requests`);
  }
  for (const value of Object.values(batch.timing ?? {}))
    if (!(typeof value === 'number' && Number.isFinite(value) && value >= 0))
      throw new TypeError('timing holds non-negative milliseconds');
  for (const r of batch.requests) {
    if (!KINDS.has(r?.kind)) throw new TypeError(`unknown permit kind ${JSON.stringify(r?.kind)}`);
    if (
      r.leadMs !== undefined &&
      !(Number.isFinite(r.leadMs) && r.leadMs >= 0 && r.leadMs <= 10_000)
    ) {
      throw new TypeError('leadMs must be between 0 and 10000 milliseconds');
    }
    if (r.confirmAt !== undefined && !Number.isFinite(r.confirmAt))
      throw new TypeError('confirmAt must be epoch milliseconds');
    if (
      r.followUps !== undefined &&
      !(Number.isInteger(r.followUps) && r.followUps >= 0 && r.followUps <= 10)
    )
      throw new TypeError('followUps must be an integer from 0 to 10');
    if (r.credits !== undefined && !(Number.isFinite(r.credits) && r.credits >= 0))
      throw new TypeError('credits must be a non-negative number');
    if (r.requester !== undefined) validateRequester(r.requester);
  }
  if (batch.policy !== undefined) validatePolicy(batch.policy);
}

const CLASSES: ReadonlySet<string> = new Set<RequestClass>(REQUEST_CLASSES);
const MODES: ReadonlySet<string> = new Set<SchedulerMode>(SCHEDULER_MODES);
const isBudget = (v: unknown) =>
  v === undefined || (typeof v === 'number' && v >= 0 && Number.isFinite(v));

function validateRequester(r: Requester): void {
  if (!r || !CLASSES.has(r.class))
    throw new TypeError('requester.class is interactive, batch or background');
  if (typeof r.tenant !== 'string' || tenantIdProblem(r.tenant))
    throw new TypeError(`requester.tenant: ${tenantIdProblem(String(r.tenant)) ?? 'a string'}`);
  if (r.batchId !== undefined && !(typeof r.batchId === 'string' && r.batchId.length <= 200))
    throw new TypeError('requester.batchId is a batch id');
  if (r.weight !== undefined && weightProblem(r.weight))
    throw new TypeError(`requester.weight: ${weightProblem(r.weight)}`);
}

function validatePolicy(p: SchedulerPolicy): void {
  if (!p || !MODES.has(p.mode)) throw new TypeError('policy.mode is fair or first-come');
  if (!(typeof p.reserve === 'number' && p.reserve >= 0 && p.reserve <= 0.5))
    throw new TypeError('policy.reserve is a share from 0 to 0.5');
  if (typeof p.tenants !== 'object' || p.tenants === null)
    throw new TypeError('policy.tenants is an object');
  for (const t of [...Object.values(p.tenants), ...(p.unlisted ? [p.unlisted] : [])]) {
    const weight = (t as { weight?: number }).weight;
    if (weight !== undefined && weightProblem(weight))
      throw new TypeError(`policy tenant weight: ${weightProblem(weight)}`);
    if (!isBudget(t.requestsPerHour) || !isBudget(t.creditsPerDay))
      throw new TypeError('policy budgets are non-negative numbers');
  }
}
