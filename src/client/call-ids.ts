// Workflow ids of calls and idempotent starts: an idempotency key enters an id only as its keyed
// HMAC, a tenant's keys are its own, and a repeated start with the same key attaches to the
// workflow it started (or is refused when its request differs).
import { randomUUID } from 'node:crypto';
import {
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import { PcdsUsageError } from '../client-errors.js';
import { OPERATOR_TENANT } from '../contract/index.js';
import {
  FINGERPRINT_MEMO,
  idempotencyDigest,
  idSecretFromEnv,
  type IdSecret,
} from '../codec/idempotency.js';

const PREFIX_RE = /^[A-Za-z0-9_.-]{1,40}$/;
const MAX_KEY_LENGTH = 512;

/**
 * The workflow id of a call. Callers pass emails and phone numbers as idempotency keys, so the
 * key itself never enters the id: only its HMAC-SHA256 with the id secret (128 bits), after a
 * readable prefix when the caller gives one it knows to be safe. A plain hash would let anyone
 * who guesses a key find (and read) the call it started.
 */
export function callWorkflowId(
  endpoint: string,
  idempotencyKey?: string,
  readablePrefix?: string,
  secret: IdSecret | undefined = idSecretFromEnv(),
): string {
  if (readablePrefix !== undefined && !PREFIX_RE.test(readablePrefix))
    throw new PcdsUsageError(
      'invalid_options',
      'idempotency key prefix: 1-40 letters, digits, _ . - only',
    );
  if (idempotencyKey === undefined) return `call-${endpoint}-${randomUUID()}`;
  if (idempotencyKey.length === 0 || idempotencyKey.length > MAX_KEY_LENGTH)
    throw new PcdsUsageError('invalid_options', `idempotency key: 1-${MAX_KEY_LENGTH} characters`);
  if (!secret)
    throw new PcdsUsageError(
      'id_secret_missing',
      'an idempotency key needs the id secret: set PCDS_ID_SECRET (32+ characters) or PCDS_ID_SECRET_FILE, the same in every client',
    );
  const digest = idempotencyDigest(secret, idempotencyKey);
  return `call-${endpoint}-${readablePrefix ? `${readablePrefix}-` : ''}k${digest}`;
}

/**
 * An idempotency key as its tenant's own: the same key from two tenants names two calls. The
 * operator's keys are as given (so are the keys of work started before tenants).
 */
export const tenantIdempotencyKey = (tenant: string, key: string) =>
  tenant === OPERATOR_TENANT ? key : `${tenant}:${key}`;

/**
 * Starts a workflow, or finds the one its idempotency key started before. With a fingerprint
 * (the key was given), the request is compared with the one that key first carried, stored in
 * the memo as a keyed HMAC: the same request gets the earlier workflow back, another one is
 * refused with idempotency_conflict rather than answered with someone else's work.
 */
export async function startOrFind<W extends Workflow>(
  temporal: Client,
  workflowType: W,
  start: WorkflowStartOptions<W>,
  fingerprint: { endpoint: string; value: string } | undefined,
): Promise<WorkflowHandle<W>> {
  let workflow: WorkflowHandle<W>;
  try {
    workflow = await temporal.workflow.start(workflowType, {
      ...start,
      ...(fingerprint ? { memo: { ...start.memo, [FINGERPRINT_MEMO]: fingerprint.value } } : {}),
    });
  } catch (err) {
    // The same key finished earlier: that workflow is the answer, not a second one.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    workflow = temporal.workflow.getHandle<W>(start.workflowId);
  }
  if (fingerprint) {
    const { memo } = await workflow.describe();
    if (memo?.[FINGERPRINT_MEMO] !== fingerprint.value)
      throw new PcdsUsageError(
        'idempotency_conflict',
        `the idempotency key was used before for a ${fingerprint.endpoint} request with other parameters: nothing was started (use another key)`,
      );
  }
  return workflow;
}
