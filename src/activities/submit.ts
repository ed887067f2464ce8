// The one no-double-submit protocol. A submit is the only request that can cost a credit, and a
// request that may have reached the service is never sent again. Every submit (a call's, a row's
// in either batch mode, a search page's) goes through `sendSubmit` against a ledger that keeps
// where the send stands, durably, outside the attempt:
//
//   1. claim   just before the POST, the permit in hand: the send is this attempt's, or an earlier
//              attempt left a claim (its accepted job, or a send that may have reached the service);
//   2. accepted after a 202 (or a job done at once), before anything else: the job is recorded, so
//              an attempt that dies after it is followed by one that polls the job, never sends;
//   3. released after a refusal that sent nothing (a 429/503/4xx, a connection never made): the
//              send may be made again.
//
// An earlier claim that was neither accepted nor released may have been sent: the call or row
// ends submit_outcome_unknown. Two homes keep the ledger:
//   - a call's workflow (submit-intent.ts): the claim is an acknowledged heartbeat of the attempt
//     carrying its token, which the server refuses once it gave the attempt up and keeps with the
//     attempt's failure; the job goes to the workflow in the attempt's heartbeat and result (or
//     the submitAccepted update). The workflow itself, which knows every attempt it made, never
//     schedules a send after an accepted or unknown one. Calls, and rows run as workflows of
//     their own, use it;
//   - the row journal (a compact row, which has no workflow of its own): entries in the store,
//     claimed by compare-and-set (batch/journal.ts, batch-row.ts).
import { PcdsError } from '../contract/pcds-error.js';
import { ApplicationFailure } from '@temporalio/common';
import { describeCode } from '../calls/failure-code.js';
import {
  classifySubmit,
  formatProblems,
  mcpArgumentProblems,
  mcpUnsupportedReason,
  validateInput,
  type EndpointDef,
  type Failure,
  type PollOutcome,
  type Requester,
  type Transport,
} from '../contract/index.js';
import { TYPICAL_CREDITS } from '../batch/cost.js';
import { TransportError } from '../http/errors.js';
import type { PermitWait } from '../throttle/permits.js';
import type { ActivityDeps } from './deps.js';
import { acceptedStatus, guardedRequest } from './guarded-request.js';

/** An accepted job, as the ledger records it. */
export interface AcceptedJob {
  keyId: string;
  requestId: string;
  status: string;
  /** Epoch ms (this worker's clock) when the 202 arrived: the job's measured start. */
  acceptedAt: number;
}

/** What a claim found: the send is this attempt's, or an earlier attempt's job or unknown send. */
export type SubmitClaim =
  { mine: true } | { mine: false; accepted: AcceptedJob } | { mine: false; accepted?: undefined };

/** Where a submit's claim, job and release are kept (see the top of this file). */
export interface SubmitLedger {
  claim(): Promise<SubmitClaim>;
  accepted(job: AcceptedJob): Promise<void>;
  released(): Promise<void>;
}

/** Why a send was refused: the service's code (and HTTP status), or transport_error. */
export type SendFailure = Pick<Failure, 'code'> & { httpStatus?: number };

/** What came of one send. */
export type Sent =
  /** The service took the job (recorded): `immediate` when it answered it done at once. */
  | { kind: 'accepted'; job: AcceptedJob; immediate?: PollOutcome }
  /** Nothing was sent or the service refused it (released): `retryable` may be sent again. */
  | { kind: 'refused'; failure: SendFailure; retryable: boolean; retryAfterMs?: number }
  /** An earlier attempt's job: poll it. */
  | { kind: 'earlier'; job: AcceptedJob }
  /** It may have reached the service with no answer (this attempt's send, or an earlier one's): never sent again. */
  | { kind: 'unknown'; earlier: boolean };

/** A claim taken by an earlier attempt, thrown out of the permit's last step. */
class ClaimedEarlier extends PcdsError {
  override name = 'ClaimedEarlier';
  constructor(readonly claim: Exclude<SubmitClaim, { mine: true }>) {
    super('send_claimed', 'an earlier attempt claimed this send');
  }
}

/** The submit's parameters checked and its transport able to carry it, or why not (no value named). */
export function submitProblem(
  endpoint: EndpointDef,
  params: Record<string, unknown>,
  transport: Transport,
  webhook: boolean,
): { ok: true; params: Record<string, unknown> } | { ok: false; code: string; message: string } {
  const valid = validateInput(endpoint, params);
  // formatProblems names fields, never their values.
  if (!valid.ok)
    return {
      ok: false,
      code: 'invalid_request',
      message: `invalid_request: ${formatProblems(valid.problems)}`,
    };
  if (transport === 'mcp') {
    const why = mcpUnsupportedReason(endpoint, { webhook });
    if (why) return { ok: false, code: 'mcp_unsupported', message: `mcp_unsupported: ${why}` };
    const problems = mcpArgumentProblems(endpoint.mcpTool!, valid.value);
    if (problems.length)
      return {
        ok: false,
        code: 'invalid_request',
        message: `invalid_request: ${endpoint.mcpTool} over MCP: ${formatProblems(problems)}`,
      };
  }
  return { ok: true, params: valid.value };
}

/**
 * The submit's parameters with the callback URL of `receiverId` (a call's workflow id, or the id
 * a compact row's deliveries are kept under), or why there is none. Built here and never
 * returned nor logged: the URL carries the receiver's token.
 */
export function withCallbackUrl(
  deps: Pick<ActivityDeps, 'callbackUrlFor'>,
  params: Record<string, unknown>,
  receiverId: string | undefined,
): { ok: true; params: Record<string, unknown> } | { ok: false; code: string; message: string } {
  if (!deps.callbackUrlFor || receiverId === undefined)
    return {
      ok: false,
      code: 'webhook_not_configured',
      message: describeCode('webhook_not_configured'),
    };
  try {
    return { ok: true, params: { ...params, callback_url: deps.callbackUrlFor(receiverId) } };
  } catch (err) {
    // A URL refused for this id (too long for the service, say): the call ends with its code.
    if (!(err instanceof ApplicationFailure) || !err.type) throw err;
    return { ok: false, code: err.type, message: err.message };
  }
}

/** One send of a submit under the key's permit and the ledger's claim. */
export async function sendSubmit(
  deps: ActivityDeps,
  submit: {
    keyId: string;
    /** Who asks (see PermitGate.acquire). */
    requester: Requester;
    endpoint: EndpointDef;
    /** Checked parameters, the callback URL included when a webhook delivers the result. */
    params: Record<string, unknown>;
    ledger: SubmitLedger;
    /** The polls the job will need (0 when a webhook delivers its result). */
    followUps?: number;
    transport?: Transport;
    onWait?: (wait: PermitWait) => void;
  },
): Promise<Sent> {
  const { keyId, endpoint, ledger } = submit;
  let reply;
  try {
    reply = await guardedRequest(deps, {
      keyId,
      kind: 'submit',
      requester: submit.requester,
      send: (c) => c.submit(endpoint, submit.params),
      beforeSend: async () => {
        const claim = await ledger.claim();
        if (!claim.mine) throw new ClaimedEarlier(claim);
      },
      followUps: submit.followUps,
      credits: TYPICAL_CREDITS[endpoint.price],
      transport: submit.transport,
      onWait: submit.onWait,
    });
  } catch (err) {
    if (err instanceof ClaimedEarlier)
      return err.claim.accepted
        ? { kind: 'earlier', job: err.claim.accepted }
        : { kind: 'unknown', earlier: true };
    if (!(err instanceof TransportError)) throw err;
    // Sent with no answer: it may have been accepted (and charged).
    if (err.phase !== 'connect') return { kind: 'unknown', earlier: false };
    await ledger.released();
    return { kind: 'refused', failure: { code: 'transport_error' }, retryable: true };
  }
  const acceptedAt = Date.now();
  const outcome = classifySubmit(endpoint, reply);
  if (outcome.kind === 'accepted' || outcome.kind === 'done') {
    const job: AcceptedJob = {
      keyId,
      requestId: outcome.requestId,
      status: acceptedStatus(outcome),
      acceptedAt,
    };
    await ledger.accepted(job);
    return outcome.kind === 'done'
      ? { kind: 'accepted', job, immediate: outcome.poll }
      : { kind: 'accepted', job };
  }
  await ledger.released();
  return outcome.kind === 'retry'
    ? {
        kind: 'refused',
        failure: outcome.failure,
        retryable: true,
        ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
      }
    : { kind: 'refused', failure: outcome.failure, retryable: false };
}
