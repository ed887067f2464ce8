// The worker's callbackUrlFor: built once from configuration and checked at start, so a public
// URL the service would refuse stops the worker with its reason instead of failing every call.
import { ApplicationFailure } from '@temporalio/common';
import type { Config } from '../config.js';
import { CURRENT_ROW_ID_SCHEME, rowWorkflowId, scopedId } from '../contract/workflow-ids.js';
import { webhookSettings, webhooksConfigured, type WebhookSettings } from './settings.js';
import { callbackUrlFor, CallbackUrlRefusedError } from './token.js';

/**
 * A workflow id of the longest shape the project makes, to test the URL length at start: a row of
 * a batch whose tenant and own id are as long as they may be.
 */
const SAMPLE_WORKFLOW_ID = rowWorkflowId(
  scopedId('t'.repeat(64), 'x'.repeat(64)),
  9_999_999_999,
  CURRENT_ROW_ID_SCHEME,
);

/**
 * (workflowId) => callback URL, for the submit activity. A URL refused for one call (e.g. a
 * workflow id too long for the 1024-character limit) fails that call, not retried, with the
 * service's own code.
 */
export function callbackUrlsFor(settings: WebhookSettings): (workflowId: string) => string {
  // Throws CallbackUrlRefusedError (a configuration problem) before any call is made.
  callbackUrlFor(SAMPLE_WORKFLOW_ID, settings);
  return (workflowId) => {
    try {
      return callbackUrlFor(workflowId, settings);
    } catch (err) {
      if (err instanceof CallbackUrlRefusedError) {
        throw ApplicationFailure.create({
          type: err.code,
          message: `${err.code}: ${err.message}`,
          nonRetryable: true,
          details: [{ code: err.code }],
        });
      }
      throw err;
    }
  };
}

/** callbackUrlsFor from configuration, or undefined when webhooks are not configured. */
export function callbackUrlsFromConfig(
  config: Config,
): ((workflowId: string) => string) | undefined {
  return webhooksConfigured(config) ? callbackUrlsFor(webhookSettings(config)) : undefined;
}
