// GET /usage outside a workflow (`pcds usage`, the cost note of `pcds batch start`, the `usage`
// tool of `pcds mcp`, the worker's credit gauges): it takes a permit from the shared throttle like
// every request, and a 429 closes the key for every caller, as the activities do.
import type { Requester } from '../contract/index.js';
import type { PermitGate } from '../throttle/permits.js';
import { ServiceError } from './errors.js';
import type { UsageQuery } from './service-client.js';
import type { ServiceClients } from './service-clients.js';

/** Tries after a 429 (each waits for a permit the throttle gives after the key's Retry-After). */
const ATTEMPTS = 3;

export async function readUsage(
  clients: ServiceClients,
  permits: PermitGate,
  options: { requester: Requester; keyId?: string; query?: UsageQuery; signal?: AbortSignal },
): Promise<Record<string, unknown>> {
  const keyId = clients.resolveKeyId(options.keyId);
  const { requester, signal } = options;
  for (let attempt = 1; ; attempt++) {
    await permits.acquire(keyId, 'usage', { requester, signal });
    try {
      return await clients.get(keyId).usage(options.query);
    } catch (err) {
      if (!(err instanceof ServiceError) || err.httpStatus !== 429) throw err;
      await permits.rateLimited(keyId, err.retryAfterMs);
      if (attempt >= ATTEMPTS) throw err;
    }
  }
}
