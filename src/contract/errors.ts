// The error taxonomy: every error.code of the interface with its HTTP status and how a caller
// must react to it, then the orchestrator's own codes (marked `local`): outcomes the interface
// leaves to the caller, and refusals of the orchestrator itself. One list: `PcdsErrorCode` is
// derived from it, so a code used anywhere is a code of this table.

/** How a caller reacts: retry after the wait the service asked, back off and retry, or stop. */
export type RetryRule = 'after_wait' | 'backoff' | 'never';

export interface ErrorInfo<C extends string = string> {
  readonly code: C;
  readonly http: number;
  readonly retry: RetryRule;
  /**
   * Systemic: the key or account is at fault, so every further call on that key would fail the
   * same way. A batch pauses on these instead of failing every remaining row.
   */
  readonly systemic: boolean;
  readonly meaning: string;
  readonly local?: boolean;
}

const e = <const C extends string>(
  code: C,
  http: number,
  retry: RetryRule,
  systemic: boolean,
  meaning: string,
  local = false,
): ErrorInfo<C> => ({
  code,
  http,
  retry,
  systemic,
  meaning,
  ...(local ? { local } : {}),
});

/** An orchestrator code: no HTTP status, never retried, about one call or batch. */
const own = <const C extends string>(code: C, meaning: string) =>
  e(code, 0, 'never', false, meaning, true);

export const ERRORS = [
  e('missing_credentials', 401, 'never', true, 'no key or secret sent'),
  e('invalid_credentials', 401, 'never', true, 'key or secret wrong, or key disabled'),
  e('api_key_expired', 401, 'never', true, 'key past expiry'),
  e('missing_api_key', 401, 'never', true, 'usage endpoint: no key sent'),
  e('invalid_api_key', 401, 'never', true, 'usage endpoint: key wrong'),
  e('missing_api_secret', 401, 'never', true, 'usage endpoint: no secret sent'),
  e('invalid_api_secret', 401, 'never', true, 'usage endpoint: secret wrong'),
  e('api_key_disabled', 403, 'never', true, 'usage endpoint: key disabled'),
  e('subscription_inactive', 403, 'never', true, 'subscription behind the key inactive'),
  e('subscription_required', 403, 'never', true, "key or plan lacks the endpoint's product"),
  e('ip_not_allowed', 403, 'never', true, 'address outside the allow-list'),
  e('access_denied', 403, 'never', true, 'account or request not allowed for this key'),
  e('insufficient_credits', 402, 'never', true, 'credits insufficient; job cannot continue'),
  e('request_not_found', 404, 'never', false, 'unknown request_id, or one owned by another key'),
  e('invalid_callback_url', 400, 'never', false, 'callback_url breaks the delivery rules'),
  e('invalid_month', 400, 'never', false, 'usage month out of range'),
  e('invalid_year', 400, 'never', false, 'usage year out of range'),
  e('invalid_date', 400, 'never', false, 'usage period in the future'),
  e('rate_limit_exceeded', 429, 'after_wait', false, 'throttled; honour Retry-After'),
  e('search_error', 500, 'never', false, 'terminal processing failure for that request_id'),
  e('internal_error', 500, 'never', false, 'terminal processing failure for that request_id'),
  e('service_unavailable', 503, 'backoff', false, 'transient; back off and retry'),
  // Validation failures of a submit: the interface does not show their codes.
  e(
    'invalid_request',
    400,
    'never',
    false,
    'an input is missing, of the wrong type or out of range',
    true,
  ),
  e('not_found', 404, 'never', false, 'no such path, or the job ended with status not_found', true),
  e('method_not_allowed', 405, 'never', false, 'the path does not answer this method', true),
  // Client-side outcomes.
  e('transport_error', 0, 'backoff', false, 'the connection failed before a reply arrived', true),
  e(
    'submit_outcome_unknown',
    0,
    'never',
    false,
    'a submit was sent but no reply came: the job may exist, so it is not repeated',
    true,
  ),
  e(
    'job_rate_limited',
    429,
    'never',
    false,
    "the job's stored terminal status is 429; submit a new one after the limit resets",
    true,
  ),
  e(
    'job_failed',
    0,
    'never',
    false,
    'the job ended in a failure status without an error code',
    true,
  ),
  e(
    'unknown_status',
    0,
    'never',
    false,
    'the service answered a status the interface does not document',
    true,
  ),
  e(
    'submit_timeout',
    0,
    'never',
    false,
    'the submit could not be sent within the maximum wait (nothing was sent)',
    true,
  ),
  e(
    'poll_timeout',
    0,
    'never',
    false,
    'the service still called the job running a maximum wait after accepting it',
    true,
  ),
  e(
    'output_unwritable',
    0,
    'never',
    false,
    'the output file cannot be written (disk full, quota, permissions): the batch pauses',
    true,
  ),
  e('invalid_response', 0, 'backoff', false, 'the reply did not match the interface', true),
  e(
    'unknown_code',
    0,
    'never',
    false,
    'the service answered an error code the interface does not document',
    true,
  ),
  e(
    'result_too_large',
    0,
    'never',
    false,
    "the job's result is over PCDS_MAX_RESULT_BYTES: not carried (nor submitted again); read it from the service by its request_id",
    true,
  ),
  e(
    'row_too_large',
    0,
    'never',
    false,
    "a batch input row is over PCDS_MAX_ROW_BYTES (or the batch's maxRowBytes): not sent",
    true,
  ),
  // The orchestrator's own refusals and outcomes (workers, workflows, client and CLI).
  own('unknown_endpoint', 'no such endpoint in the catalogue'),
  own('not_async_endpoint', 'the endpoint is synchronous: there is no job to submit and poll'),
  own('unknown_key', 'no key with that id is configured on the worker'),
  own(
    'webhook_not_configured',
    'webhook mode needs a configured receiver (PCDS_WEBHOOK_PUBLIC_URL)',
  ),
  own(
    'submit_intent_not_recorded',
    'the workflow could not record that the submit was about to be sent, so it was not sent',
  ),
  own(
    'mcp_unsupported',
    'the call cannot go over the MCP transport (no MCP tool for the endpoint, or webhook mode)',
  ),
  e(
    'mcp_login_required',
    401,
    'never',
    true,
    'the MCP endpoint needs an OAuth sign-in for this key (run pcds mcp-login), or the stored grant was refused',
    true,
  ),
  own('unknown_throttle', 'no throttle runs for that key id'),
  own(
    'tenant_budget',
    "the caller's tenant spent a budget the operator set (requests an hour or credits a day across the pool): nothing was sent; more is allowed once the budget frees",
  ),
  own(
    'usage_rate_limited',
    "pcds mcp: a caller's usage readings reach the service at most once a minute (ask again shortly)",
  ),
  own(
    'port_in_use',
    'a port the local stack would listen on is taken (the message names the flag)',
  ),
  own('invalid_params', "the parameters break the endpoint's input rules"),
  own(
    'invalid_config',
    'a PCDS_ setting is missing, malformed or at odds with another (the message names the setting, never its value)',
  ),
  own('invalid_usage', 'the command was called wrongly: a flag, an argument or their combination'),
  own('command_failed', 'the command could not do what it was asked (its message says why)'),
  own(
    'TEMPORAL_CLI_ENV_INVALID',
    'PCDS_TEMPORAL_CLI names no executable file: point it at the temporal CLI, or unset it',
  ),
  own(
    'TEMPORAL_CLI_INSTALL_FAILED',
    'no temporal CLI was found and none could be installed into .tools/ (the message says how to get one)',
  ),
  own(
    'send_claimed',
    "inside a submit: an earlier attempt claimed the send, so the claim decides (never a call's outcome)",
  ),
  own('invalid_options', 'an option is missing or out of range'),
  own('invalid_batch_id', 'a batch or export id is 1 to 64 letters, digits, _ or -'),
  own('input_not_readable', 'the input file cannot be read'),
  own('invalid_input_file', 'the input file or its columns do not fit the endpoint'),
  own('output_exists', 'the output file exists and is not empty'),
  own(
    'store_not_configured',
    'the worker has no store for batch rows and results (PCDS_STORE_URL)',
  ),
  own('invalid_store_url', 'PCDS_STORE_URL names no store this project can open'),
  own('store_unreadable', 'a stored value cannot be opened with the configured encryption keys'),
  own('batch_not_loaded', "the batch's rows are still loading, or their loader stopped"),
  own('no_such_batch', 'the store has no batch with this id'),
  own(
    'store_mismatch',
    "the batch's rows are in another store than the worker's: give the client and every worker the same PCDS_STORE_URL",
  ),
  own('output_not_jsonl', 'a search export writes JSONL: its output must end in .jsonl'),
  own(
    'path_not_allowed',
    'pcds mcp: the path does not resolve inside its file root (PCDS_MCP_FILES)',
  ),
  own(
    'callback_not_allowed',
    "pcds mcp: a caller's callback_url is refused (results go only to the orchestrator's receiver)",
  ),
  own('batch_exists', 'a batch with that id was started before'),
  own('export_exists', 'a search export with that id was started before'),
  own('batch_not_found', 'no batch with that id'),
  own('export_not_found', 'no search export with that id'),
  own('export_unavailable', "the batch's files cannot be found for an export (no worker answered)"),
  own('call_not_found', 'no call with that workflow id'),
  own(
    'temporal_unreachable',
    'the Temporal server cannot be reached or refused the connection (the message names the PCDS_TEMPORAL_* setting to fix)',
  ),
  own(
    'idempotency_conflict',
    'the idempotency key was used before with other parameters: the earlier work stands, nothing new started',
  ),
  own(
    'id_secret_missing',
    'an idempotency key needs the id secret (PCDS_ID_SECRET or PCDS_ID_SECRET_FILE) shared by every client',
  ),
  own(
    'no_worker',
    'no worker polls the task queue: the command would only wait (start `pcds worker`)',
  ),
  own('no_keys', 'the worker has no API key configured'),
  own('no_keys_left', "every key of the batch's pool was removed"),
  own('paused_by_operator', 'an operator paused the batch (a pause reason, not a failure)'),
  own('invalid_row', "the input row breaks the endpoint's input rules; it was not sent"),
  own(
    'credit_budget',
    "the row was not sent: it could have taken the batch's credits past its --max-credits budget",
  ),
  own('row_already_run', 'a call for this row already completed under this batch id'),
  own(
    'batch_before_store',
    'a batch started before the store (its rows in files): workers of this release do not run it; finish it with the release that started it',
  ),
  own('row_id_taken', "another workflow holds a row's workflow id: the row was not sent"),
  own('child_failed', "a batch row's call ended without an error code"),
  own('cancelled', 'cancelled before it finished'),
  own('terminated', 'terminated by an operator'),
  own('workflow_failed', 'the workflow ended without an error code (e.g. timed out)'),
] as const satisfies readonly ErrorInfo[];

/** Every code of the table: the service's and the orchestrator's. */
export type PcdsErrorCode = (typeof ERRORS)[number]['code'];

/** The codes of the table, in its order. */
export const ERROR_CODES: readonly PcdsErrorCode[] = ERRORS.map((x) => x.code);

const byCode = new Map<string, ErrorInfo<PcdsErrorCode>>(ERRORS.map((x) => [x.code, x]));

export function isPcdsErrorCode(code: string): code is PcdsErrorCode {
  return byCode.has(code);
}

/** A code as received (a failure type, a service's error.code): itself if known, else unknown_code. */
export function pcdsErrorCode(code: string | undefined): PcdsErrorCode {
  return code !== undefined && isPcdsErrorCode(code) ? code : 'unknown_code';
}

export function errorInfo(code: string): ErrorInfo<PcdsErrorCode> | undefined {
  return byCode.get(code);
}

/** Systemic codes pause a batch (401 and 403 classes, 402). */
export function isSystemic(code: string): boolean {
  return byCode.get(code)?.systemic ?? false;
}

/** 401 and 403 codes: the key is at fault (revoked, rotated, outside its allow-list, no product). */
export function isKeyFault(code: string): boolean {
  const http = byCode.get(code)?.http;
  return http === 401 || http === 403;
}

/**
 * Where a failure came from: the HTTP request itself (a poll or submit that was throttled or hit
 * an unavailable service), or the job, whose stored terminal status is the failure.
 */
export type FailureOrigin = 'request' | 'job';

/**
 * How to react to an HTTP failure. The origin matters for 429: throttling of the request itself
 * is transient, whereas a 429 stored as the job's terminal status ends the request.
 */
export function retryRuleFor(
  httpStatus: number,
  code: string | undefined,
  origin: FailureOrigin = 'request',
): RetryRule {
  if (origin === 'job') return 'never';
  if (httpStatus === 429) return 'after_wait';
  if (httpStatus === 503) return 'backoff';
  const info = code ? byCode.get(code) : undefined;
  if (info) return info.retry;
  // Unknown codes: the interface names only 503 as transient, so other 5xx are terminal
  // processing failures, and a submit is never repeated on a guess; the rest are not retried.
  return 'never';
}

// The three HTTP-date forms (RFC 9110 5.6.7): IMF-fixdate, RFC 850 and asctime.
const IMF_FIXDATE = /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const RFC850_DATE = /^[A-Za-z]+, \d{2}-[A-Za-z]{3}-\d{2} \d{2}:\d{2}:\d{2} GMT$/;
const ASCTIME_DATE = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

/** Parse Retry-After (delta seconds or an HTTP date) into milliseconds from `now`. */
export function parseRetryAfter(
  value: string | null | undefined,
  now = Date.now(),
): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // Fractions are not valid delta-seconds, but waiting slightly longer is harmless.
  if (/^\d+\.\d+$/.test(v)) return Math.ceil(Number(v) * 1000);
  let text: string;
  if (IMF_FIXDATE.test(v) || RFC850_DATE.test(v)) text = v;
  // asctime carries no zone; HTTP dates are always UTC, so say so before parsing.
  else if (ASCTIME_DATE.test(v)) text = `${v} GMT`;
  else return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
