// The one no-double-submit protocol (src/activities/submit.ts), with no server: a scripted service
// and a ledger that records what it was told. Whatever the reply, the ledger hears a claim before
// the POST and then exactly one of `accepted` or `released`, or neither when the request may have
// reached the service unanswered; an earlier claim means no POST at all.
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import type { AcquireOptions } from '../../../src/throttle/permits.js';
import type { ActivityDeps } from '../../../src/activities/deps.js';
import {
  sendSubmit,
  submitProblem,
  type AcceptedJob,
  type SubmitClaim,
  type SubmitLedger,
} from '../../../src/activities/submit.js';
import { getEndpoint, interactiveRequester, type Reply } from '../../../src/contract/index.js';
import { TransportError } from '../../../src/http/errors.js';

const RID = '9f86d081884c7d659a2feaa0c55ad015_1718000000_1';
const enrichment = getEndpoint('person_enrichment');
const ok = (data: Record<string, unknown>) => ({ success: true, data, timestamp: 'now' });
const fail = (code: string) => ({ success: false, error: { code, message: 'm' } });

/** A service answering each submit with the next scripted reply (or throwing it). */
function depsAnswering(answer: Reply | Error) {
  const sent: Record<string, unknown>[] = [];
  const deps = {
    clients: {
      get: () => ({
        submit: (_e: unknown, params: Record<string, unknown>) => {
          sent.push(params);
          return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
        },
      }),
    },
    permits: {
      acquire: (_k: string, _kind: string, { beforeSend }: AcquireOptions) =>
        beforeSend ? beforeSend() : Promise.resolve(),
      rateLimited: () => Promise.resolve(),
      creditsExhausted: () => Promise.resolve(),
    },
  } as unknown as ActivityDeps;
  return { deps, sent };
}

/** A ledger that keeps what it hears, and finds `earlier` when claimed. */
function recordingLedger(earlier: SubmitClaim = { mine: true }) {
  const heard: string[] = [];
  const jobs: AcceptedJob[] = [];
  const ledger: SubmitLedger = {
    claim() {
      heard.push('claim');
      return Promise.resolve(earlier);
    },
    accepted(job) {
      heard.push('accepted');
      jobs.push(job);
      return Promise.resolve();
    },
    released() {
      heard.push('released');
      return Promise.resolve();
    },
  };
  return { ledger, heard, jobs };
}

async function send(answer: Reply | Error, earlier?: SubmitClaim) {
  const { deps, sent } = depsAnswering(answer);
  const { ledger, heard, jobs } = recordingLedger(earlier);
  const result = await new MockActivityEnvironment().run(() =>
    sendSubmit(deps, {
      keyId: 'k1',
      requester: interactiveRequester(),
      endpoint: enrichment,
      params: { email: 'x' },
      ledger,
    }),
  );
  return { result, heard, jobs, sends: sent.length };
}

describe('sendSubmit', () => {
  it('a 202 is recorded as accepted before anything else, never released', async () => {
    const before = Date.now();
    const { result, heard, jobs, sends } = await send({
      httpStatus: 202,
      body: ok({ request_id: RID, status: 'queued' }),
    });
    expect(sends).toBe(1);
    expect(heard).toEqual(['claim', 'accepted']);
    expect(jobs[0]).toMatchObject({ keyId: 'k1', requestId: RID, status: 'queued' });
    expect(jobs[0].acceptedAt).toBeGreaterThanOrEqual(before);
    expect(result).toEqual({ kind: 'accepted', job: jobs[0] });
  });

  it('a job done at once is recorded too, and carries its outcome', async () => {
    const data = { request_id: RID, status: 'completed', completed: true, result: { a: 1 } };
    const { result, heard } = await send({ httpStatus: 200, body: ok(data) });
    expect(heard).toEqual(['claim', 'accepted']);
    expect(result).toMatchObject({
      kind: 'accepted',
      job: { requestId: RID, status: 'completed' },
      immediate: { kind: 'found', result: { a: 1 } },
    });
  });

  it('a 429 releases the claim and may be sent again after its Retry-After', async () => {
    const { result, heard } = await send({
      httpStatus: 429,
      body: fail('rate_limit_exceeded'),
      retryAfterMs: 7_000,
    });
    expect(heard).toEqual(['claim', 'released']);
    expect(result).toMatchObject({
      kind: 'refused',
      retryable: true,
      retryAfterMs: 7_000,
      failure: { code: 'rate_limit_exceeded', httpStatus: 429 },
    });
  });

  it('a refusal for good releases the claim and is not to be sent again', async () => {
    const { result, heard } = await send({ httpStatus: 402, body: fail('insufficient_credits') });
    expect(heard).toEqual(['claim', 'released']);
    expect(result).toMatchObject({
      kind: 'refused',
      retryable: false,
      failure: { code: 'insufficient_credits' },
    });
  });

  it('a connection never made sent nothing: released, to be sent again', async () => {
    const { result, heard } = await send(new TransportError('connect', 'ECONNREFUSED'));
    expect(heard).toEqual(['claim', 'released']);
    expect(result).toEqual({
      kind: 'refused',
      failure: { code: 'transport_error' },
      retryable: true,
    });
  });

  it('a request sent with no reply may have been accepted: neither recorded nor released', async () => {
    const { result, heard } = await send(new TransportError('after_send', 'UND_ERR_SOCKET'));
    expect(heard).toEqual(['claim']);
    expect(result).toEqual({ kind: 'unknown', earlier: false });
  });

  it("an earlier attempt's accepted job is taken, with no POST", async () => {
    const job: AcceptedJob = { keyId: 'k2', requestId: RID, status: 'processing', acceptedAt: 1 };
    const { result, heard, sends } = await send(
      { httpStatus: 202, body: ok({ request_id: 'another' }) },
      { mine: false, accepted: job },
    );
    expect(sends).toBe(0);
    expect(heard).toEqual(['claim']);
    expect(result).toEqual({ kind: 'earlier', job });
  });

  it("an earlier attempt's send that may have reached the service is never made again", async () => {
    const { result, heard, sends } = await send(
      { httpStatus: 202, body: ok({ request_id: RID }) },
      { mine: false },
    );
    expect(sends).toBe(0);
    expect(heard).toEqual(['claim']);
    expect(result).toEqual({ kind: 'unknown', earlier: true });
  });
});

describe('submitProblem', () => {
  it('names the parameter at fault, never its value', () => {
    const problem = submitProblem(enrichment, { email: 'not-an-email@' }, 'http', false);
    expect(problem).toMatchObject({ ok: false, code: 'invalid_request' });
    expect(JSON.stringify(problem)).not.toContain('not-an-email');
  });

  it('passes checked parameters', () => {
    expect(submitProblem(enrichment, { email: 'a@b.example' }, 'http', false)).toEqual({
      ok: true,
      params: { email: 'a@b.example' },
    });
  });

  it('refuses a webhook over MCP, which has no callback', () => {
    expect(submitProblem(enrichment, { email: 'a@b.example' }, 'mcp', true)).toMatchObject({
      ok: false,
      code: 'mcp_unsupported',
    });
  });
});
