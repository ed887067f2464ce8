// No caller of `pcds mcp` picks where results are sent: a callback_url in a tool's parameters is
// refused. Deliveries by webhook go only to the orchestrator's own receiver (--webhooks mode).
import { PcdsUsageError } from '../client-errors.js';
import { hasCallbackKey } from '../contract/callback-url.js';

/**
 * Refuses parameters that carry a callback URL: callback_url or a spelling of it (callbackUrl,
 * Callback-URL), at any depth, since a free-form input is passed on as it is.
 */
export function refuseCallbackUrl(params: Record<string, unknown>): void {
  if (hasCallbackKey(params))
    throw new PcdsUsageError(
      'callback_not_allowed',
      "params.callback_url (or a key like it, at any depth) is not accepted by pcds mcp: results are read with the status tools (webhooks go only to the orchestrator's own receiver)",
    );
}
