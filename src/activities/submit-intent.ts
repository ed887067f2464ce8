// The last step of a submit activity before its POST: the calling workflow records that this
// attempt may now be sent (the submitIntent update). An attempt lost without that record sent
// nothing, so the workflow makes it again; one the workflow has given up on is refused here and
// never sent.
import { Context } from '@temporalio/activity';
import { submitIntentUpdate } from '../workflows/signals.js';
import { backoffDelayMs, retryableFailure } from './failures.js';

/** The step to run before sending, or none when the workflow asked for no intent record. */
export function intentRecorder(token: string | undefined): (() => Promise<void>) | undefined {
  const ctx = Context.current();
  const execution = ctx.info.workflowExecution;
  if (token === undefined || !execution) return undefined;
  const { workflowId, runId } = execution;
  return async () => {
    try {
      await ctx.client.workflow
        .getHandle(workflowId, runId)
        .executeUpdate(submitIntentUpdate, { args: [{ token }] });
    } catch {
      // Refused (the workflow gave up on this attempt) or not reachable: nothing was sent. A
      // workflow still waiting for this attempt makes the submit again after the delay.
      throw retryableFailure({ code: 'submit_intent_not_recorded' }, backoffDelayMs(1));
    }
  };
}
