// Synchronous account activities: usage (free) and enrichment feedback.
import { backgroundRequester, interactiveRequester, type Requester } from '../contract/index.js';
import { ServiceError, TransportError } from '../http/errors.js';
import type { UsageQuery } from '../http/service-client.js';
import type { ActivityDeps } from './deps.js';
import { terminalFailure, transientFailure } from './failures.js';
import { withHeartbeat } from './heartbeat.js';

async function syncCall<T>(
  deps: ActivityDeps,
  keyId: string | undefined,
  kind: 'usage' | 'feedback',
  requester: Requester,
  fn: (c: ReturnType<ActivityDeps['clients']['get']>) => Promise<T>,
): Promise<T> {
  const id = deps.clients.resolveKeyId(keyId);
  const client = deps.clients.get(id);
  try {
    return await withHeartbeat(async (signal) => {
      await deps.permits.acquire(id, kind, { requester, signal });
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
    readUsage(input: {
      keyId?: string;
      query?: UsageQuery;
      /** Who asks (default: the operator's background work). */
      requester?: Requester;
    }): Promise<Record<string, unknown>> {
      const requester = input.requester ?? backgroundRequester();
      return syncCall(deps, input.keyId, 'usage', requester, (c) => c.usage(input.query));
    },
    sendEnrichmentFeedback(input: {
      keyId?: string;
      body: Record<string, unknown>;
      /** Who asks (default: the operator's interactive work). */
      requester?: Requester;
    }): Promise<Record<string, unknown>> {
      const requester = input.requester ?? interactiveRequester();
      return syncCall(deps, input.keyId, 'feedback', requester, (c) => c.feedback(input.body));
    },
  };
}
