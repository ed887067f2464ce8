// The client's pure parts: how workflow failures become PcdsCallErrors, how a batch's status is
// read from its execution status, and what the client refuses before anything is sent (with
// messages that never echo a parameter's value). No server: the connection is lazy and unused.
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, WorkflowFailedError } from '@temporalio/client';
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  RetryState,
  TerminatedFailure,
  TimeoutFailure,
  TimeoutType,
} from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchStatusSource, prepareBatch } from '../../../src/client/batch-launch.js';
import { callErrorOf } from '../../../src/client-errors.js';
import { callWorkflowId, createPcdsClient, type PcdsClient } from '../../../src/client.js';
import { PcdsCallError, PcdsError, type PcdsErrorCode } from '../../../src/index.js';
import {
  idSecretFromEnv,
  idSecretFromSettings,
  MIN_ID_SECRET_LENGTH,
  requestFingerprint,
} from '../../../src/codec/idempotency.js';

const failed = (cause: Error) =>
  new WorkflowFailedError('Workflow execution failed', cause, RetryState.NON_RETRYABLE_FAILURE);

describe('callErrorOf', () => {
  it('takes the failure type as code and the details it carries', () => {
    const err = callErrorOf(
      'call-x',
      failed(
        ApplicationFailure.create({
          type: 'insufficient_credits',
          message: 'insufficient_credits (HTTP 402): credits insufficient',
          nonRetryable: true,
          details: [{ code: 'insufficient_credits', httpStatus: 402, requestId: 'r-1' }],
        }),
      ),
    );
    expect(err).toBeInstanceOf(PcdsCallError);
    expect(err).toMatchObject({
      code: 'insufficient_credits',
      workflowId: 'call-x',
      httpStatus: 402,
      requestId: 'r-1',
      message: 'insufficient_credits (HTTP 402): credits insufficient',
    });
  });

  it.each<[string, Error, PcdsErrorCode]>([
    ['an undocumented type', ApplicationFailure.nonRetryable('m', 'brand_new'), 'unknown_code'],
    ['a cancel', new CancelledFailure('cancelled'), 'cancelled'],
    ['a terminate', new TerminatedFailure('terminated'), 'terminated'],
    [
      'a timeout',
      new TimeoutFailure('timed out', undefined, TimeoutType.START_TO_CLOSE),
      'workflow_failed',
    ],
  ])('maps %s to %s', (_what, cause, code) => {
    const err = callErrorOf('batch-b1', failed(cause));
    expect(err).toBeInstanceOf(PcdsCallError);
    expect((err as PcdsCallError).code).toBe(code);
    expect((err as PcdsCallError).workflowId).toBe('batch-b1');
  });

  it("takes the code of an activity's failure that ended the workflow (its cause), not the wrapper", () => {
    const refused = ApplicationFailure.create({
      type: 'store_mismatch',
      message: "the batch's rows are in the store sqlite:/a: set PCDS_STORE_URL",
      nonRetryable: true,
    });
    const err = callErrorOf(
      'batch-b1',
      failed(
        new ActivityFailure(
          'Activity task failed',
          'storedBatchInput',
          '1',
          RetryState.NON_RETRYABLE_FAILURE,
          'worker-1',
          refused,
        ),
      ),
    );
    expect(err).toBeInstanceOf(PcdsCallError);
    expect(err).toMatchObject({ code: 'store_mismatch', message: refused.message });
  });

  it('leaves other errors alone', () => {
    const other = new Error('connection lost');
    expect(callErrorOf('call-x', other)).toBe(other);
  });
});

describe('batchStatusSource', () => {
  it.each([
    ['RUNNING', 'progress'],
    ['CONTINUED_AS_NEW', 'progress'],
    ['PAUSED', 'progress'],
    ['COMPLETED', 'summary'],
    ['FAILED', 'failure'],
    ['TERMINATED', 'failure'],
    ['TIMED_OUT', 'failure'],
    ['CANCELLED', 'failure'],
  ] as const)('%s: %s', (execution, source) => {
    expect(batchStatusSource(execution)).toBe(source);
  });
});

describe('what the client refuses before sending anything', () => {
  const EMAIL = 'jane.roe@example.com';
  let client: PcdsClient;
  const dir = mkdtempSync(join(tmpdir(), 'pcds-client-unit-'));
  const input = join(dir, 'in.csv');
  writeFileSync(input, `email\n${EMAIL}\n`);

  beforeAll(async () => {
    // Nothing here reaches the server: every case fails before the first request.
    client = await createPcdsClient({
      connection: Connection.lazy({ address: '127.0.0.1:1' }),
      dataConverter: {},
    });
  });
  afterAll(async () => {
    await client.close();
  });

  const refusal = async (p: Promise<unknown> | (() => unknown)): Promise<PcdsError> => {
    const err: unknown = await (typeof p === 'function' ? Promise.resolve().then(p) : p).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PcdsError);
    expect((err as Error).message).not.toContain(EMAIL);
    return err as PcdsError;
  };

  it('bad parameters: invalid_params, naming the field, not the value', async () => {
    // An unknown key is counted: it may be a value (a JSONL row's key), not a field name.
    const extra = await refusal(
      // @ts-expect-error keys the endpoint lacks: refused by the types, and at run time
      client.startCall('person_enrichment', { email: EMAIL, [EMAIL]: 1, query: 'x' }),
    );
    expect(extra.code).toBe('invalid_params');
    expect(extra.name).toBe('PcdsUsageError');
    expect(extra.message).toBe(
      'invalid parameters for person_enrichment: query is not a parameter of this endpoint; 1 other key is not a parameter of this endpoint',
    );
    const malformed = 'jane.roe-at-example.com';
    const bad = await refusal(client.startCall('person_enrichment', { email: malformed }));
    expect(bad.code).toBe('invalid_params');
    expect(bad.message).toContain('email');
    expect(bad.message).not.toContain(malformed);
  });

  it('unknown and synchronous endpoints', async () => {
    // Refused by the types, and at run time for a caller in JavaScript.
    // @ts-expect-error not an endpoint of the catalogue
    expect((await refusal(client.call('no_such_endpoint', {}))).code).toBe('unknown_endpoint');
    // @ts-expect-error synchronous: no durable call
    expect((await refusal(client.call('usage', {}))).code).toBe('not_async_endpoint');
  });

  it('out-of-range options: invalid_options', async () => {
    const search = { query: 'engineers in Berlin' };
    for (const p of [
      client.startCall(
        'person_enrichment',
        { email: EMAIL },
        { idempotencyKey: 'k', idempotencyKeyPrefix: EMAIL },
      ),
      client.searchPeople(search, { maxResults: 0 }),
      client.startSearchExport(search, { maxResults: 5000, output: join(dir, 'o.jsonl') }),
      client.startSearchExport(search, { maxResults: 5, pageSize: 101, output: join(dir, 'o') }),
      client.startBatch({ input, output: join(dir, 'out.jsonl'), window: 0 }),
    ])
      expect((await refusal(p)).code).toBe('invalid_options');
    expect((await refusal(client.getBatch('b1').setWindow(1001))).code).toBe('invalid_options');
  });

  it('ids that are no ids are refused without being echoed', async () => {
    expect((await refusal(() => client.getBatch(EMAIL))).code).toBe('invalid_batch_id');
    expect((await refusal(() => client.getSearchExport(EMAIL))).code).toBe('invalid_batch_id');
    expect(
      (await refusal(prepareBatch({ input, output: join(dir, 'o2.jsonl'), batchId: EMAIL }))).code,
    ).toBe('invalid_batch_id');
  });

  it('planBatch plans with no server and leaves an output it would overwrite as it is', async () => {
    const output = join(dir, 'planned.jsonl');
    writeFileSync(output, '{}\n');
    const plan = await client.planBatch(
      { input, output, overwrite: true },
      { keys: [{ id: 'k1', perMinute: 100, perHour: 1000 }] },
    );
    expect(plan).toMatchObject({ rows: 1, sent: 1, requests: 2, keys: 1 });
    expect(readFileSync(output, 'utf8')).toBe('{}\n');
    expect((await refusal(client.planBatch({ input, output }, { keys: [] }))).code).toBe(
      'output_exists',
    );
  });

  it('a search export’s output must end in .jsonl (it writes JSONL)', async () => {
    for (const name of ['export.csv', 'export.json', 'export'])
      expect(
        (
          await refusal(
            client.startSearchExport({ query: 'x' }, { maxResults: 5, output: join(dir, name) }),
          )
        ).code,
      ).toBe('output_not_jsonl');
  });

  it('an output that exists is kept unless overwrite is asked', async () => {
    const output = join(dir, 'exists.jsonl');
    writeFileSync(output, '{}\n');
    expect((await refusal(client.startBatch({ input, output }))).code).toBe('output_exists');
    expect(
      (await refusal(client.startSearchExport({ query: 'x' }, { maxResults: 5, output }))).code,
    ).toBe('output_exists');
  });
});

describe('call workflow ids', () => {
  const secret = idSecretFromSettings({ PCDS_ID_SECRET: 'a'.repeat(MIN_ID_SECRET_LENGTH) })!;
  const other = idSecretFromSettings({ PCDS_ID_SECRET: 'b'.repeat(MIN_ID_SECRET_LENGTH) })!;

  it('hold a keyed hash of the idempotency key, never the key, after a prefix the caller chose', () => {
    const email = 'jane.roe@example.com';
    const id = callWorkflowId('person_enrichment', email, undefined, secret);
    expect(id).toMatch(/^call-person_enrichment-k[0-9a-f]{32}$/);
    expect(id).not.toContain('jane');
    expect(callWorkflowId('person_enrichment', email, undefined, secret)).toBe(id);
    expect(callWorkflowId('person_enrichment', '+4930123456', undefined, secret)).not.toBe(id);
    expect(callWorkflowId('person_enrichment', email, 'crm-sync', secret)).toBe(
      `call-person_enrichment-crm-sync-${id.slice('call-person_enrichment-'.length)}`,
    );
    expect(() => callWorkflowId('person_enrichment', '', undefined, secret)).toThrow(
      'idempotency key',
    );
    expect(() => callWorkflowId('person_enrichment', 'k', email, secret)).toThrow(
      'idempotency key prefix: 1-40 letters, digits, _ . - only',
    );
    expect(callWorkflowId('person_enrichment')).toMatch(/^call-person_enrichment-[0-9a-f-]{36}$/);
  });

  it('cannot be derived from the key alone: another secret, another id; not the plain SHA-256', () => {
    const key = 'lead-42';
    const id = callWorkflowId('person_enrichment', key, undefined, secret);
    expect(callWorkflowId('person_enrichment', key, undefined, other)).not.toBe(id);
    // What ids were before: an unsalted hash anyone could compute from a guessed key.
    const unsalted = createHash('sha256')
      .update(`pcds-idempotency-key\0${key}`)
      .digest('hex')
      .slice(0, 32);
    expect(id).not.toContain(unsalted);
    expect(id).toBe(
      `call-person_enrichment-k${createHmac('sha256', 'a'.repeat(MIN_ID_SECRET_LENGTH))
        .update(`pcds-idempotency-key\0${key}`)
        .digest('hex')
        .slice(0, 32)}`,
    );
  });

  it('need the id secret: without one an idempotent start is refused, naming the setting', async () => {
    let err: unknown;
    try {
      callWorkflowId('person_enrichment', 'lead-42', undefined, undefined);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PcdsError);
    expect((err as PcdsError).code).toBe('id_secret_missing');
    expect((err as Error).message).toContain('PCDS_ID_SECRET');
    expect((err as Error).message).not.toContain('lead-42');
    // A client without a secret refuses before it connects (the connection is lazy here).
    const bare = await createPcdsClient({
      connection: Connection.lazy({ address: '127.0.0.1:1' }),
      dataConverter: {},
    });
    const refused = await bare
      .startCall('person_enrichment', { email: 'jane.roe@example.com' }, { idempotencyKey: 'k1' })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((refused as PcdsError).code).toBe('id_secret_missing');
    await bare.close();
  });

  it('a short secret is a configuration error that does not echo it', async () => {
    const short = 'short-secret-value';
    const messageOf = async (run: () => unknown) => {
      try {
        await run();
      } catch (e) {
        return (e as Error).message;
      }
      return 'not refused';
    };
    for (const message of [
      await messageOf(() =>
        createPcdsClient({
          connection: Connection.lazy({ address: '127.0.0.1:1' }),
          dataConverter: {},
          idSecret: short,
        }),
      ),
      await messageOf(() => idSecretFromEnv({ PCDS_ID_SECRET: short })),
    ]) {
      expect(message).toContain(`at least ${MIN_ID_SECRET_LENGTH} characters`);
      expect(message).not.toContain(short);
    }
  });
});

describe('request fingerprints', () => {
  const secret = idSecretFromSettings({ PCDS_ID_SECRET: 'a'.repeat(MIN_ID_SECRET_LENGTH) })!;
  const other = idSecretFromSettings({ PCDS_ID_SECRET: 'b'.repeat(MIN_ID_SECRET_LENGTH) })!;
  const params = { email: 'jane.roe@example.com', reveal: { phones: true, emails: false } };

  it('are one value for one request, whatever the order of its fields', () => {
    const fp = requestFingerprint(secret, 'person_enrichment', params);
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(
      requestFingerprint(secret, 'person_enrichment', {
        reveal: { emails: false, phones: true },
        email: 'jane.roe@example.com',
      }),
    ).toBe(fp);
  });

  it('change with the endpoint, any parameter and the secret, and hold no value', () => {
    const fp = requestFingerprint(secret, 'person_enrichment', params);
    expect(requestFingerprint(secret, 'company_enrichment', params)).not.toBe(fp);
    expect(
      requestFingerprint(secret, 'person_enrichment', { ...params, email: 'john@example.com' }),
    ).not.toBe(fp);
    expect(
      requestFingerprint(secret, 'person_enrichment', {
        ...params,
        reveal: { phones: false, emails: false },
      }),
    ).not.toBe(fp);
    expect(requestFingerprint(other, 'person_enrichment', params)).not.toBe(fp);
    // Not a plain hash of the request either.
    expect(fp).not.toBe(
      createHash('sha256')
        .update(JSON.stringify({ endpoint: 'person_enrichment', request: params }))
        .digest('hex'),
    );
  });
});
