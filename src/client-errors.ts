// The errors the client raises, all PcdsErrors: a workflow it started ended in failure
// (PcdsCallError), or a request was refused before anything started (PcdsUsageError). A workflow's
// failure becomes one through the one failure mapping (calls/failure-code.ts).
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { failureDetailsOf } from './contract/failure-details.js';
import { failureCause } from './calls/failure-code.js';
import {
  PcdsError,
  pcdsErrorCode,
  type InputProblem,
  type PcdsErrorCode,
} from './contract/index.js';

/**
 * A workflow started by the client (a call, a search, an export or a batch) ended in failure.
 * `code` is the service's error code, or the orchestrator's own (poll_timeout, no_keys,
 * cancelled, terminated, ...).
 */
export class PcdsCallError extends PcdsError {
  override name = 'PcdsCallError';
  constructor(
    code: PcdsErrorCode,
    message: string,
    readonly workflowId: string,
    readonly httpStatus?: number,
    readonly requestId?: string,
  ) {
    super(code, message);
  }
}

/** Parameters or options were refused before anything started, or the id names nothing. */
export class PcdsUsageError extends PcdsError {
  override name = 'PcdsUsageError';
  constructor(
    code: PcdsErrorCode,
    message: string,
    readonly problems: InputProblem[] = [],
  ) {
    super(code, message);
  }
}

/**
 * A workflow's failure as a PcdsCallError: the failure type is the code (unknown types become
 * unknown_code), a cancel or a terminate has its own code. Anything else is returned unchanged.
 */
export function callErrorOf(workflowId: string, err: unknown): unknown {
  if (!(err instanceof WorkflowFailedError)) return err;
  // A batch's failure can sit under its row's child and that child's activity.
  const cause = failureCause(err.cause, CLIENT_FAILURE_DEPTH);
  switch (cause.kind) {
    case 'application': {
      const { httpStatus, requestId } = failureDetailsOf(cause.failure.details);
      return new PcdsCallError(
        pcdsErrorCode(cause.failure.type ?? undefined),
        cause.failure.message,
        workflowId,
        httpStatus,
        requestId,
      );
    }
    case 'cancelled':
      return new PcdsCallError('cancelled', 'the workflow was cancelled', workflowId);
    case 'terminated':
      return new PcdsCallError('terminated', 'the workflow was terminated', workflowId);
    default: {
      const name = cause.kind === 'activity_timeout' ? cause.failure.name : nameOf(cause.failure);
      return new PcdsCallError(
        'workflow_failed',
        `the workflow ended without an error code (${name ?? err.message})`,
        workflowId,
      );
    }
  }
}

/** How many activity or child failures the client looks through for the coded one. */
const CLIENT_FAILURE_DEPTH = 5;

const nameOf = (failure: unknown): string | undefined =>
  failure instanceof Error ? failure.name : undefined;

/** Awaits a workflow's result; its failure is thrown as a PcdsCallError (see callErrorOf). */
export async function outcomeOf<T>(workflowId: string, result: Promise<T>): Promise<T> {
  try {
    return await result;
  } catch (err) {
    throw callErrorOf(workflowId, err);
  }
}

/** Runs a request on a workflow by id; an id that names no workflow throws `notFound()`. */
export async function orNotFound<T>(run: () => Promise<T>, notFound: () => PcdsError): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw notFound();
    throw err;
  }
}
