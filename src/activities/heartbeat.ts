// Heartbeats an activity while it waits for a permit or a reply, so a worker that dies mid-request
// is noticed after the heartbeat timeout rather than the (long) start-to-close timeout. An
// activity that says where it stands (a compact row: row, phase, request id) keeps saying it.
//
// The SDK sends an activity's heartbeats on its own (the first at once, later ones throttled), on
// a path apart from the activity's acknowledged ones (`ctx.client.activity.heartbeat`), and the
// server keeps only the last it received. A submit that claims its send in an acknowledged
// heartbeat (submit-intent.ts) must know whether one of the SDK's could still land after the
// claim and erase it: `sdkHeartbeated` says whether the SDK was ever asked to send one, and a
// submit starts `quietly`, with none until its first interval has passed.
import { Context } from '@temporalio/activity';

const HEARTBEAT_EVERY_MS = 5_000;

/**
 * The activity's heartbeat timeout (ms), or undefined when it has none (the server then says 0).
 */
export function heartbeatTimeoutOf(ctx: Context = Context.current()): number | undefined {
  const t = ctx.info.heartbeatTimeoutMs;
  return t !== undefined && t > 0 ? t : undefined;
}

/** How often an activity heartbeats: every 5 s, or a sixth of a shorter heartbeat timeout. */
const everyMs = (ctx: Context) =>
  Math.min(HEARTBEAT_EVERY_MS, (heartbeatTimeoutOf(ctx) ?? Infinity) / 6);

/** The details each activity last gave: every later heartbeat of that activity repeats them. */
const standing = new WeakMap<Context, unknown>();
/** Activities that asked the SDK for a heartbeat. */
const viaSdk = new WeakSet<Context>();
/** Activities whose first heartbeat waits for the first interval. */
const quiet = new WeakSet<Context>();

function sdkHeartbeat(ctx: Context, details: unknown): void {
  viaSdk.add(ctx);
  ctx.heartbeat(details);
}

/**
 * Heartbeats with where the activity stands; the server keeps the last heartbeat's details (shown
 * with the pending activity), so a bare heartbeat from a helper must not erase them.
 */
export function heartbeatWhere(details: unknown, ctx: Context = Context.current()): void {
  standing.set(ctx, details);
  sdkHeartbeat(ctx, details);
}

/** A heartbeat that repeats the activity's details, if it gave any. */
export function heartbeat(ctx: Context = Context.current()): void {
  sdkHeartbeat(ctx, standing.get(ctx));
}

/** Whether the SDK was ever asked to heartbeat this activity (one may still be on its way). */
export function sdkHeartbeated(ctx: Context = Context.current()): boolean {
  return viaSdk.has(ctx);
}

/**
 * The activity's first heartbeat waits for the first interval instead of going at once: a submit
 * whose permit comes quickly then claims its send with no heartbeat of the SDK before it. (The
 * server counts its heartbeat timeout from the activity's start, so nothing is lost.)
 */
export function startQuietly(ctx: Context = Context.current()): void {
  quiet.add(ctx);
}

export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  if (!quiet.has(ctx)) heartbeat(ctx);
  const timer = setInterval(() => heartbeat(ctx), everyMs(ctx));
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
