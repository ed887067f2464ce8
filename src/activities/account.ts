// Synchronous account activities: usage (free) and enrichment feedback.
import { ServiceError, TransportError } from '../http/errors.js';
import type { UsageQuery } from '../http/service-client.js';
import type { ActivityDeps } from './deps.js';
import { terminalFailure, transientFailure } from './failures.js';
import { withHeartbeat } from './heartbeat.js';

async function syncCall<T>(
  deps: ActivityDeps,
  keyId: string | undefined,
  kind: 'usage' | 'feedback',
  fn: (c: ReturnType<ActivityDeps['clients']['get']>) => Promise<T>,
): Promise<T> {
  const id = deps.clients.resolveKeyId(keyId);
  const client = deps.clients.get(id);
  try {
    return await withHeartbeat(async (signal) => {
      await deps.permits.acquire(id, kind, signal);
      return fn(client);
    });
  } catch (err) {
    if (err instanceof TransportError) throw transientFailure({ code: 'transport_error' });
    if (err instanceof ServiceError) {
      if (err.httpStatus === 429) {
        await deps.permits.rateLimited(id, err.retryAfterMs);
        throw transientFailure(err, err.retryAfterMs);
      }
      if (err.httpStatus === 503) throw transientFailure(err);
      throw terminalFailure(err);
    }
    throw err;
  }
}

export function createAccountActivities(deps: ActivityDeps) {
  return {
    /** GET /usage for a key: the statistics object of the interface. */
    readUsage(input: { keyId?: string; query?: UsageQuery }): Promise<Record<string, unknown>> {
      return syncCall(deps, input.keyId, 'usage', (c) => c.usage(input.query));
    },
    sendEnrichmentFeedback(input: {
      keyId?: string;
      body: Record<string, unknown>;
    }): Promise<Record<string, unknown>> {
      return syncCall(deps, input.keyId, 'feedback', (c) => c.feedback(input.body));
    },
  };
}
