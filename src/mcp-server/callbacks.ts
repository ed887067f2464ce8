// No caller of `pcds mcp` picks where results are sent: a callback_url in a tool's parameters is
// refused. Deliveries by webhook go only to the orchestrator's own receiver (--webhooks mode).
import { PcdsUsageError } from '../client-errors.js';

/** Refuses parameters that carry a callback_url (at the top level, where the service reads it). */
export function refuseCallbackUrl(params: Record<string, unknown>): void {
  if (Object.hasOwn(params, 'callback_url'))
    throw new PcdsUsageError(
      'callback_not_allowed',
      "params.callback_url is not accepted by pcds mcp: results are read with the status tools (webhooks go only to the orchestrator's own receiver)",
    );
}
