// The errors the client raises, all PcdsErrors: a workflow it started ended in failure
// (PcdsCallError), or a request was refused before anything started (PcdsUsageError). Also the
// one mapping of Temporal's workflow failures and not-found errors onto them.
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { failureDetailsOf } from './contract/failure-details.js';
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  TerminatedFailure,
} from '@temporalio/common';
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
  const cause = codedCause(err.cause);
  if (cause instanceof ApplicationFailure) {
    const { httpStatus, requestId } = failureDetailsOf(cause.details);
    return new PcdsCallError(
      pcdsErrorCode(cause.type ?? undefined),
      cause.message,
      workflowId,
      httpStatus,
      requestId,
    );
  }
  if (cause instanceof CancelledFailure)
    return new PcdsCallError('cancelled', 'the workflow was cancelled', workflowId);
  if (cause instanceof TerminatedFailure)
    return new PcdsCallError('terminated', 'the workflow was terminated', workflowId);
  return new PcdsCallError(
    'workflow_failed',
    `the workflow ended without an error code (${cause?.name ?? err.message})`,
    workflowId,
  );
}

/**
 * The failure that says why: an activity's or a child's failure is the wrapper, its cause the
 * application failure with the code (a batch whose first activity refused it, say).
 */
function codedCause(failure: Error | undefined): Error | undefined {
  let at = failure;
  for (let depth = 0; depth < 5; depth++) {
    if (!(at instanceof ActivityFailure || at instanceof ChildWorkflowFailure)) return at;
    if (!at.cause) return at;
    at = at.cause;
  }
  return at;
}

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
