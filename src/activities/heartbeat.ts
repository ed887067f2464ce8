// Heartbeats an activity while it waits for a permit or a reply, so a worker that dies mid-request
// is noticed after the heartbeat timeout rather than the (long) start-to-close timeout.
import { Context } from '@temporalio/activity';

const HEARTBEAT_EVERY_MS = 5_000;

export async function withHeartbeat<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
