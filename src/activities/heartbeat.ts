// Heartbeats an activity while it waits for a permit or a reply, so a worker that dies mid-request
// is noticed after the heartbeat timeout rather than the (long) start-to-close timeout. An
// activity that says where it stands (a compact row: row, phase, request id) keeps saying it.
//
// A submit whose ledger is its workflow (submit-intent.ts) claims its send in a heartbeat, and the
// server keeps only the last heartbeat it received. The SDK sends its heartbeats on its own, one at
// a time but beside the activity's acknowledged ones: one it sent before the claim (the first at
// once, details empty) could reach the server after the claim and erase it, and a send then looks
// never made. So such an activity heartbeats *in order* until its accepted job is recorded: every
// heartbeat an acknowledged call of its own, one at a time, none through the SDK (see
// `orderHeartbeats`).
import { Context } from '@temporalio/activity';
import {
  ActivityCancelledError,
  ActivityNotFoundError,
  ActivityPausedError,
  ActivityResetError,
} from '@temporalio/client';

const HEARTBEAT_EVERY_MS = 5_000;

/** How often an activity heartbeats: every 5 s, or a sixth of a shorter heartbeat timeout. */
const everyMs = (ctx: Context) =>
  Math.min(HEARTBEAT_EVERY_MS, (ctx.info.heartbeatTimeoutMs ?? Infinity) / 6);

/** The details each activity last gave: every later heartbeat of that activity repeats them. */
const standing = new WeakMap<Context, unknown>();

/** Heartbeats that reach the server in the order given, each acknowledged before the next. */
class OrderedHeartbeats {
  /** The last heartbeat sent (settled or not): the next is sent after it. */
  private last: Promise<unknown> = Promise.resolve();
  private inFlight = 0;
  /** The activity has just started: its first heartbeat is not due yet (nor in flight at its claim). */
  private sentAt = Date.now();
  /** Aborted when the server says the attempt is cancelled, paused, reset or gone. */
  readonly stopped = new AbortController();

  constructor(private readonly ctx: Context) {}

  /** Sends `details` after every heartbeat before it; resolves once the server recorded it. */
  send(details: unknown): Promise<void> {
    const ctx = this.ctx;
    this.inFlight += 1;
    this.sentAt = Date.now();
    const sent = this.last
      .catch(() => undefined)
      .then(() => ctx.client.activity.heartbeat(ctx.info.taskToken, details))
      .catch((err: unknown) => {
        if (endsAttempt(err)) this.stopped.abort(err);
        throw err;
      })
      .finally(() => {
        this.inFlight -= 1;
      });
    this.last = sent;
    return sent;
  }

  /** A heartbeat that only says the attempt lives: none while one is on its way or went out lately. */
  tick(details: unknown): void {
    const gap = 2 * everyMs(this.ctx);
    if (this.inFlight > 0 || Date.now() - this.sentAt < gap) return;
    // A failed one is only missed: the next tick tries again, as the SDK's own heartbeats do.
    this.send(details).catch(() => undefined);
  }
}

/** The server's answers that end the attempt's work: it was cancelled, paused, reset, or is gone. */
function endsAttempt(err: unknown): boolean {
  return (
    err instanceof ActivityCancelledError ||
    err instanceof ActivityPausedError ||
    err instanceof ActivityResetError ||
    err instanceof ActivityNotFoundError
  );
}

/** Whether the server recorded a heartbeat that failed with `err` (it answered with a stop). */
export function recordedAnyway(err: unknown): boolean {
  return (
    err instanceof ActivityCancelledError ||
    err instanceof ActivityPausedError ||
    err instanceof ActivityResetError
  );
}

const ordered = new WeakMap<Context, OrderedHeartbeats>();

/**
 * From now on, the activity's heartbeats reach the server in order, each acknowledged (see the top
 * of this file), until `unorderHeartbeats`. Call it before the activity's first heartbeat: the SDK
 * has then sent none that could arrive late.
 */
export function orderHeartbeats(ctx: Context = Context.current()): OrderedHeartbeats {
  let o = ordered.get(ctx);
  if (!o) ordered.set(ctx, (o = new OrderedHeartbeats(ctx)));
  return o;
}

/** The activity's heartbeats go through the SDK again, carrying where it stands. */
export function unorderHeartbeats(ctx: Context = Context.current()): void {
  if (!ordered.delete(ctx)) return;
  ctx.heartbeat(standing.get(ctx));
}

/**
 * Records `details` as where the activity stands and waits until the server has it, after every
 * heartbeat before it. Throws the client's error when it was not recorded (or the server answered
 * with a stop: see `recordedAnyway`).
 */
export async function heartbeatRecorded(
  details: unknown,
  ctx: Context = Context.current(),
): Promise<void> {
  standing.set(ctx, details);
  const o = ordered.get(ctx);
  if (o) return o.send(details);
  // Not ordered: the SDK's heartbeats carry the details too, so none sent later erases them.
  ctx.heartbeat(details);
  await ctx.client.activity.heartbeat(ctx.info.taskToken, details);
}

/**
 * Heartbeats with where the activity stands; the server keeps the last heartbeat's details (shown
 * with the pending activity), so a bare heartbeat from a helper must not erase them.
 */
export function heartbeatWhere(details: unknown, ctx: Context = Context.current()): void {
  standing.set(ctx, details);
  const o = ordered.get(ctx);
  if (o) o.tick(details);
  else ctx.heartbeat(details);
}

/** A heartbeat that repeats the activity's details, if it gave any. */
export function heartbeat(ctx: Context = Context.current()): void {
  const o = ordered.get(ctx);
  if (o) o.tick(standing.get(ctx));
  else ctx.heartbeat(standing.get(ctx));
}

/**
 * Runs `fn` heartbeating every few seconds. Its signal aborts when the activity is cancelled, and,
 * while its heartbeats are ordered, when the server answers one with a stop.
 */
export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  heartbeat(ctx);
  const timer = setInterval(() => heartbeat(ctx), everyMs(ctx));
  const o = ordered.get(ctx);
  const signal = o
    ? AbortSignal.any([ctx.cancellationSignal, o.stopped.signal])
    : ctx.cancellationSignal;
  try {
    return await fn(signal);
  } finally {
    clearInterval(timer);
  }
}
