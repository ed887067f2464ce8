// Heartbeats an activity while it waits for a permit or a reply, so a worker that dies mid-request
// is noticed after the heartbeat timeout rather than the (long) start-to-close timeout. An
// activity that says where it stands (a compact row: row, phase, request id) keeps saying it.
import { Context } from '@temporalio/activity';

const HEARTBEAT_EVERY_MS = 5_000;

/** The details each activity last gave: every later heartbeat of that activity repeats them. */
const standing = new WeakMap<Context, unknown>();

/**
 * Heartbeats with where the activity stands; the server keeps the last heartbeat's details (shown
 * with the pending activity), so a bare heartbeat from a helper must not erase them.
 */
export function heartbeatWhere(details: unknown, ctx: Context = Context.current()): void {
  standing.set(ctx, details);
  ctx.heartbeat(details);
}

/** A heartbeat that repeats the activity's details, if it gave any. */
export function heartbeat(ctx: Context = Context.current()): void {
  ctx.heartbeat(standing.get(ctx));
}

export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  heartbeat(ctx);
  const timer = setInterval(() => heartbeat(ctx), HEARTBEAT_EVERY_MS);
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
