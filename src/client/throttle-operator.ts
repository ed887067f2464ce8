// What operators do with the throttles: read each key's state and close a credit breaker.
// Used by `pcds throttle` and available to services through the typed client.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { PcdsError } from '../contract/index.js';
import {
  keyIdOfThrottleWorkflow,
  resetCreditsUpdate,
  THROTTLE_WORKFLOW_TYPES,
  throttleStateQuery,
  throttleWorkflowId,
  type ThrottleStatus,
} from '../throttle/protocol.js';

export class UnknownThrottleError extends PcdsError {
  override name = 'UnknownThrottleError';
  declare readonly code: 'unknown_throttle';
  constructor(readonly keyId: string) {
    super(
      'unknown_throttle',
      `no throttle runs for key "${keyId}" (it starts with the key's first request)`,
    );
  }
}

/** Key ids whose throttle workflow is running. */
async function listThrottledKeys(client: Client): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({
    query: `WorkflowType IN (${THROTTLE_WORKFLOW_TYPES.map((t) => `'${t}'`).join(', ')}) AND ExecutionStatus = 'Running'`,
  })) {
    const keyId = keyIdOfThrottleWorkflow(wf.workflowId);
    if (keyId !== undefined) ids.push(keyId);
  }
  return [...new Set(ids)].sort();
}

/** Runs `fn` on the key's throttle workflow; a key without one is an UnknownThrottleError. */
async function onThrottle<T>(
  client: Client,
  keyId: string,
  fn: (handle: ReturnType<Client['workflow']['getHandle']>) => Promise<T>,
): Promise<T> {
  try {
    return await fn(client.workflow.getHandle(throttleWorkflowId(keyId)));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new UnknownThrottleError(keyId);
    throw err;
  }
}

/** The state of the given keys' throttles (all running ones when omitted), as of now. */
export async function readThrottleStatus(
  client: Client,
  keyIds?: string[],
): Promise<ThrottleStatus[]> {
  const ids = keyIds ?? (await listThrottledKeys(client));
  const now = Date.now();
  return Promise.all(
    ids.map((keyId) => onThrottle(client, keyId, (h) => h.query(throttleStateQuery, now))),
  );
}

/** Closes the key's credit breaker (after credits were added): submits go again. */
export function resumeCredits(
  client: Client,
  keyId: string,
  by = 'operator',
): Promise<{ wasOpen: boolean }> {
  return onThrottle(client, keyId, (h) => h.executeUpdate(resetCreditsUpdate, { args: [{ by }] }));
}

export interface ThrottleStatusReading {
  keyId: string;
  status?: ThrottleStatus;
  /** Why the state could not be read (e.g. no worker polls the throttle's task queue). */
  error?: string;
}

/** Like readThrottleStatus, but one unreadable key does not hide the others. */
export async function readEachThrottleStatus(
  client: Client,
  keyIds?: string[],
  timeoutMs = 5_000,
): Promise<ThrottleStatusReading[]> {
  const ids = keyIds ?? (await listThrottledKeys(client));
  const now = Date.now();
  return Promise.all(
    ids.map(async (keyId): Promise<ThrottleStatusReading> => {
      try {
        const status = await client.connection.withDeadline(Date.now() + timeoutMs, () =>
          onThrottle(client, keyId, (h) => h.query(throttleStateQuery, now)),
        );
        return { keyId, status };
      } catch (err) {
        if (err instanceof UnknownThrottleError) return { keyId, error: err.message };
        return {
          keyId,
          error: `state unavailable (is a worker polling the throttle's task queue?): ${err instanceof Error ? err.message : String(err)}`,
        };
      }
    }),
  );
}
