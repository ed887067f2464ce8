// Tells the calling workflow that this activity waits for a permit (minute or hour window full,
// key closed by a 429), so the call shows `throttled` while it waits. Fire and forget: the wait
// goes on whatever the answer, and a workflow that already shows this wait refuses the update
// without a history event (an older workflow without the handler refuses it too).
import { Context } from '@temporalio/activity';
import type { PermitWait } from '../throttle/permits.js';
import { permitWaitUpdate } from '../calls/signals.js';

export function permitWaitReporter(): ((wait: PermitWait) => void) | undefined {
  const ctx = Context.current();
  const execution = ctx.info.workflowExecution;
  if (!execution) return undefined;
  return (wait) => {
    ctx.client.workflow
      .getHandle(execution.workflowId, execution.runId)
      .executeUpdate(permitWaitUpdate, { args: [wait] })
      .catch(() => undefined);
  };
}
