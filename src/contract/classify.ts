// Pure classifiers that turn one HTTP reply into what the caller does next. The workflow and the
// activities both use them, so a reply means the same thing everywhere.
import type { EndpointDef } from './catalogue.js';
import { jobView, parseEnvelope, serviceJobMs } from './envelope.js';
import { retryRuleFor } from './errors.js';
import { extractResult, isEmptyResult } from './results.js';
import { ACK_STATUSES, classifyStatus } from './status.js';

/** A reply as the HTTP layer saw it: status, parsed JSON body (or undefined) and Retry-After in ms. */
export interface Reply {
  httpStatus: number;
  body: unknown;
  retryAfterMs?: number;
}

export interface Failure {
  code: string;
  message: string;
  httpStatus: number;
}

export type SubmitOutcome =
  | { kind: 'accepted'; requestId: string; status: string }
  /** The service answered at once with a terminal job (some endpoints complete immediately). */
  | { kind: 'done'; requestId: string; poll: PollOutcome }
  | { kind: 'retry'; failure: Failure; retryAfterMs?: number }
  | { kind: 'rejected'; failure: Failure };

export type PollOutcome =
  | { kind: 'running'; status: string }
  | {
      kind: 'found';
      status: string;
      result: unknown;
      data: Record<string, unknown>;
      /** The job's duration by the service's own timestamps, when it gives them. */
      serviceJobMs?: number;
    }
  | { kind: 'empty'; status: string; data: Record<string, unknown>; serviceJobMs?: number }
  | { kind: 'failed'; failure: Failure; status?: string }
  | { kind: 'retry'; failure: Failure; retryAfterMs?: number };

function failureOf(reply: Reply, fallback: string): Failure {
  const env = parseEnvelope(reply.body);
  const err = env?.error ?? (env?.data ? jobView(env.data).error : undefined);
  return {
    code: err?.code ?? fallback,
    message: err?.message ?? `HTTP ${reply.httpStatus}`,
    httpStatus: reply.httpStatus,
  };
}

/**
 * A reply that carries the job itself (data with a status). A throttled or unavailable request
 * never reached the job, so it carries none; a 429 that does is the job's stored terminal status.
 */
function carriesJob(reply: Reply): boolean {
  const data = parseEnvelope(reply.body)?.data;
  return typeof data?.status === 'string' || typeof data?.completed === 'boolean';
}

/** Transient replies: 429 on the request itself and 503, retried after the wait / with back-off. */
function transient(
  reply: Reply,
): { kind: 'retry'; failure: Failure; retryAfterMs?: number } | undefined {
  if (reply.httpStatus !== 429 && reply.httpStatus !== 503) return undefined;
  if (reply.httpStatus === 429 && carriesJob(reply)) return undefined;
  const fallback = reply.httpStatus === 429 ? 'rate_limit_exceeded' : 'service_unavailable';
  return {
    kind: 'retry',
    failure: failureOf(reply, fallback),
    ...(reply.retryAfterMs !== undefined ? { retryAfterMs: reply.retryAfterMs } : {}),
  };
}

export function classifyPoll(endpoint: EndpointDef, reply: Reply): PollOutcome {
  const t = transient(reply);
  if (t) return t;
  const env = parseEnvelope(reply.body);
  if (!env) {
    if (reply.httpStatus >= 500)
      return {
        kind: 'retry',
        failure: {
          code: 'invalid_response',
          message: `HTTP ${reply.httpStatus} without an envelope`,
          httpStatus: reply.httpStatus,
        },
      };
    return {
      kind: 'failed',
      failure: {
        code: 'invalid_response',
        message: `HTTP ${reply.httpStatus}: the reply is not an envelope`,
        httpStatus: reply.httpStatus,
      },
    };
  }
  const job = jobView(env.data);
  // A failed envelope (whatever the HTTP status) or a non-2xx reply ends the request.
  if (!env.success || reply.httpStatus >= 300) {
    const f = failureOf(reply, 'job_failed');
    // A 429 that got past `transient` is the job's stored terminal status, not throttling of this poll.
    if (f.code === 'rate_limit_exceeded' || reply.httpStatus === 429) f.code = 'job_rate_limited';
    return { kind: 'failed', failure: f, ...(job.status ? { status: job.status } : {}) };
  }
  const cls = classifyStatus(job.status, endpoint.polling, job.completed);
  switch (cls.kind) {
    case 'running':
      return { kind: 'running', status: cls.status };
    case 'failed': {
      const err = job.error;
      const code =
        err?.code === 'rate_limit_exceeded'
          ? 'job_rate_limited'
          : (err?.code ?? (cls.status === 'not_found' ? 'not_found' : 'job_failed'));
      return {
        kind: 'failed',
        status: cls.status,
        failure: {
          code,
          message: err?.message ?? `job ended with status ${cls.status}`,
          httpStatus: reply.httpStatus,
        },
      };
    }
    case 'unknown':
      return {
        kind: 'failed',
        status: cls.status,
        failure: {
          code: 'unknown_status',
          message: `undocumented status "${cls.status}"`,
          httpStatus: reply.httpStatus,
        },
      };
    case 'succeeded': {
      const data = env.data ?? {};
      const result = extractResult(data, endpoint.resultPath);
      const took = serviceJobMs(job);
      const timing = took !== undefined ? { serviceJobMs: took } : {};
      // Person search keeps its rows behind page reads; completion alone is the outcome here.
      if (endpoint.polling === 'person_search')
        return { kind: 'found', status: cls.status, result, data, ...timing };
      return isEmptyResult(result)
        ? { kind: 'empty', status: cls.status, data, ...timing }
        : { kind: 'found', status: cls.status, result, data, ...timing };
    }
  }
}

export function classifySubmit(endpoint: EndpointDef, reply: Reply): SubmitOutcome {
  const env = parseEnvelope(reply.body);
  // Only the service's own 503 (its envelope, service_unavailable) proves the job was refused; a
  // bare 503 comes from a gateway in front of it, like a 502 or 504, and is handled below.
  const t = reply.httpStatus === 503 && !env ? undefined : transient(reply);
  if (t) return t;
  if (!env && reply.httpStatus >= 200 && reply.httpStatus < 300) {
    // The service took the request but the reply is unreadable: the job may exist, so never repeat it.
    return {
      kind: 'rejected',
      failure: {
        code: 'invalid_response',
        message: `HTTP ${reply.httpStatus}: the reply is not an envelope`,
        httpStatus: reply.httpStatus,
      },
    };
  }
  if (!env && reply.httpStatus >= 500) {
    // A 5xx without the service's envelope comes from a gateway (502, 503, 504): the request may have
    // reached the service and been accepted, so it is not repeated and not called terminal either.
    return {
      kind: 'rejected',
      failure: {
        code: 'submit_outcome_unknown',
        message: `HTTP ${reply.httpStatus} without the service's envelope: the job may exist, so the submit is not repeated`,
        httpStatus: reply.httpStatus,
      },
    };
  }
  if (!env || !env.success || reply.httpStatus >= 300) {
    const f = failureOf(reply, reply.httpStatus >= 500 ? 'internal_error' : 'invalid_request');
    return retryRuleFor(reply.httpStatus, f.code) === 'never'
      ? { kind: 'rejected', failure: f }
      : { kind: 'retry', failure: f };
  }
  const job = jobView(env.data);
  if (!job.requestId) {
    return {
      kind: 'rejected',
      failure: {
        code: 'invalid_response',
        message: 'accepted without a request_id',
        httpStatus: reply.httpStatus,
      },
    };
  }
  // An acknowledgement (202, or queued / processing without completed=true) is an accepted job
  // whatever the endpoint's polling contract: the ack statuses belong to the common async pattern.
  const ack =
    job.status !== undefined &&
    (ACK_STATUSES as readonly string[]).includes(job.status.trim().toLowerCase());
  const cls = classifyStatus(job.status, endpoint.polling, job.completed);
  if (cls.kind === 'running' || reply.httpStatus === 202 || (ack && job.completed !== true)) {
    return { kind: 'accepted', requestId: job.requestId, status: job.status ?? 'queued' };
  }
  return { kind: 'done', requestId: job.requestId, poll: classifyPoll(endpoint, reply) };
}
