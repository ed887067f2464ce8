import { beforeEach, describe, expect, it } from 'vitest';
import { batchRequester, getEndpoint, interactiveRequester } from '../../../src/contract/index.js';

const requester = interactiveRequester();
import { ServiceError, TransportError } from '../../../src/http/errors.js';
import { McpUnsupportedError } from '../../../src/http/errors.js';
import {
  PermitRefusedError,
  TenantBudgetError,
  type PermitGate,
} from '../../../src/throttle/permits.js';
import type { ServiceClient } from '../../../src/http/service-client.js';
import { METRICS } from '../../../src/metrics/catalogue.js';
import {
  meterNameOf,
  recordRowLines,
  recordWebhookDelivery,
  takeKeysWithTraffic,
  useMetricMeter,
} from '../../../src/metrics/instruments.js';
import {
  creditsOf,
  meteredPermitGate,
  meteredServiceClient,
} from '../../../src/metrics/metered.js';
import { RecordingMeter } from './recording-meter.js';

const M = METRICS;
const name = (def: (typeof METRICS)[keyof typeof METRICS]) => meterNameOf(def);
let meter: RecordingMeter;

beforeEach(() => {
  meter = new RecordingMeter();
  useMetricMeter(meter);
  takeKeysWithTraffic();
});

const USAGE = {
  credits_used: { total: 120, search: 20, enrichment: 100 },
  limits: { monthly_allocation: 1000, available_credits: 880, is_unlimited: false },
};

/** A client whose every method answers as told. */
function fakeClient(answers: Partial<Record<keyof ServiceClient, () => unknown>>): ServiceClient {
  const call = (m: keyof ServiceClient) => async () => {
    const answer = answers[m];
    if (!answer) throw new Error(`${m} not expected`);
    return answer();
  };
  return {
    submit: call('submit'),
    poll: call('poll'),
    readSearchPage: call('readSearchPage'),
    usage: call('usage'),
    feedback: call('feedback'),
  } as ServiceClient;
}

describe('meteredServiceClient', () => {
  const enrichment = getEndpoint('person_enrichment');

  it('counts each request by key id, endpoint path, kind, transport and status', async () => {
    const client = meteredServiceClient(
      fakeClient({
        submit: () => ({ httpStatus: 202, body: {} }),
        poll: () => ({ httpStatus: 429, body: {}, retryAfterMs: 1000 }),
        readSearchPage: () => {
          throw new TransportError('after_send', 'UND_ERR_HEADERS_TIMEOUT');
        },
        feedback: () => {
          throw new ServiceError('invalid_api_key', 401, 'invalid_api_key (HTTP 401)');
        },
      }),
      'pool-a',
      'http',
    );
    await client.submit(enrichment, { email: 'ada@example.com' });
    await client.poll(enrichment, 'req-1');
    await expect(client.readSearchPage('req-2', 0, 10)).rejects.toBeInstanceOf(TransportError);
    await expect(client.feedback({})).rejects.toBeInstanceOf(ServiceError);

    const requests = meter.of(name(M.requests)).map((r) => r.tags);
    expect(requests).toEqual([
      {
        key: 'pool-a',
        endpoint: '/person/enrichment',
        kind: 'submit',
        transport: 'http',
        status: '202',
      },
      {
        key: 'pool-a',
        endpoint: '/person/enrichment',
        kind: 'poll',
        transport: 'http',
        status: '429',
      },
      {
        key: 'pool-a',
        endpoint: '/person/search',
        kind: 'poll',
        transport: 'http',
        status: 'error',
      },
      {
        key: 'pool-a',
        endpoint: '/person/enrichment/feedback',
        kind: 'other',
        transport: 'http',
        status: '401',
      },
    ]);
    expect(meter.of(name(M.rateLimited)).map((r) => r.tags)).toEqual([
      { key: 'pool-a', endpoint: '/person/enrichment' },
    ]);
    // Bounded values only: no parameter, request id or credential reaches a label.
    const values = meter.records.flatMap((r) => Object.values(r.tags).map(String));
    for (const v of values) expect(v).not.toMatch(/ada@example\.com|req-\d/);
  });

  it('does not count what the MCP transport refuses before sending', async () => {
    const client = meteredServiceClient(
      fakeClient({
        usage: () => {
          throw new McpUnsupportedError('usage has no MCP tool');
        },
      }),
      'pool-a',
      'mcp',
    );
    await expect(client.usage()).rejects.toBeInstanceOf(McpUnsupportedError);
    expect(meter.records).toEqual([]);
  });

  it('sets the credit gauges from GET /usage, and counts the read as other', async () => {
    const client = meteredServiceClient(fakeClient({ usage: () => USAGE }), 'pool-a', 'http');
    expect(await client.usage()).toBe(USAGE);
    expect(meter.of(name(M.creditsUsed))).toMatchObject([{ value: 120, tags: { key: 'pool-a' } }]);
    expect(meter.of(name(M.creditsAvailable))).toMatchObject([
      { value: 880, tags: { key: 'pool-a' } },
    ]);
    expect(meter.of(name(M.requests))).toMatchObject([
      { tags: { endpoint: '/usage', kind: 'other', status: '200' } },
    ]);
  });

  it('notes the keys with traffic for the credit sampler, leaving out its own /usage reads', async () => {
    const a = meteredServiceClient(fakeClient({ usage: () => USAGE }), 'a', 'http');
    const b = meteredServiceClient(
      fakeClient({ submit: () => ({ httpStatus: 202, body: {} }) }),
      'b',
      'mcp',
    );
    await a.usage();
    await b.submit(enrichment, {});
    expect(takeKeysWithTraffic()).toEqual(['b']);
    expect(takeKeysWithTraffic()).toEqual([]);
  });
});

describe('creditsOf', () => {
  it('reads used and available credits; an unlimited account has no available figure', () => {
    expect(creditsOf(USAGE)).toEqual({ used: 120, available: 880 });
    expect(
      creditsOf({
        credits_used: { total: 5 },
        limits: { is_unlimited: true, available_credits: 0 },
      }),
    ).toEqual({ used: 5, available: undefined });
    expect(creditsOf({})).toBeUndefined();
  });
});

describe('meteredPermitGate', () => {
  const gate = (acquire: PermitGate['acquire']): PermitGate => ({
    acquire,
    rateLimited: () => Promise.resolve(),
    creditsExhausted: () => Promise.resolve(),
    resetCredits: () => Promise.resolve(),
  });

  it('counts a granted permit and records how long it waited, in seconds', async () => {
    const metered = meteredPermitGate(gate(() => new Promise((r) => setTimeout(r, 60))));
    await metered.acquire('pool-a', 'submit', { requester });
    expect(meter.of(name(M.permitsGranted))).toMatchObject([
      {
        value: 1,
        tags: { key: 'pool-a', kind: 'submit', class: requester.class, tenant: 'default' },
      },
    ]);
    const [wait] = meter.of(name(M.throttleWait));
    expect(wait.tags).toEqual({
      key: 'pool-a',
      kind: 'submit',
      class: requester.class,
      tenant: 'default',
    });
    expect(wait.value).toBeGreaterThanOrEqual(0.05);
    expect(wait.value).toBeLessThan(5);
  });

  it('passes everything the caller gives on to the gate, the wait listener included', async () => {
    const heard: unknown[] = [];
    const metered = meteredPermitGate(
      gate(async (keyId, kind, { onWait }) => {
        onWait?.({ keyId, kind, reason: 'minute_window', until: 1, reportAfterMs: 0 });
      }),
    );
    await metered.acquire('pool-a', 'poll', { requester, onWait: (w) => heard.push(w) });
    expect(heard).toEqual([
      { keyId: 'pool-a', kind: 'poll', reason: 'minute_window', until: 1, reportAfterMs: 0 },
    ]);
  });

  it('counts a permit refused by the credit breaker, and no grant', async () => {
    const metered = meteredPermitGate(
      gate(() => Promise.reject(new PermitRefusedError('pool-a', Date.now()))),
    );
    await expect(metered.acquire('pool-a', 'submit', { requester })).rejects.toBeInstanceOf(
      PermitRefusedError,
    );
    expect(meter.sum(name(M.permitsRefused), { key: 'pool-a', code: 'insufficient_credits' })).toBe(
      1,
    );
    expect(meter.of(name(M.permitsGranted))).toEqual([]);
  });

  it('labels tenants by name only when configured, others as other, and counts budget refusals', async () => {
    const metered = meteredPermitGate(
      gate(async (_keyId, kind, { requester: who }) => {
        if (who.tenant === 'mallory' && kind === 'usage')
          throw new TenantBudgetError('mallory', 'requests_per_hour', 100, Date.now());
      }),
      ['alice'],
    );
    await metered.acquire('pool-a', 'poll', { requester: batchRequester('b1', 'alice') });
    await metered.acquire('pool-a', 'poll', { requester: interactiveRequester('bob') });
    await expect(
      metered.acquire('pool-a', 'usage', { requester: interactiveRequester('mallory') }),
    ).rejects.toBeInstanceOf(TenantBudgetError);
    const granted = name(M.permitsGranted);
    expect(meter.sum(granted, { class: 'batch', tenant: 'alice' })).toBe(1);
    expect(meter.sum(granted, { class: 'interactive', tenant: 'other' })).toBe(1);
    expect(meter.sum(granted, { tenant: 'bob' })).toBe(0);
    expect(
      meter.sum(name(M.permitsRefused), {
        code: 'tenant_budget',
        class: 'interactive',
        tenant: 'other',
      }),
    ).toBe(1);
  });
});

describe('recordRowLines', () => {
  it('counts written rows by outcome, skipped (credit budget) included, and ignores non-row lines', () => {
    const found = { row: 1, outcome: 'found' };
    const empty = { row: 2, outcome: 'empty' };
    const failed = { row: 3, outcome: 'failed', code: 'invalid_row' };
    const skipped = { row: 4, outcome: 'skipped', code: 'credit_budget' };
    recordRowLines([found, empty, failed, skipped]);
    // A search export's lines carry no outcome: they are not batch rows.
    recordRowLines([{ row: 1, result: {} }]);
    const rows = name(M.rows);
    expect(meter.sum(rows, { outcome: 'found' })).toBe(1);
    expect(meter.sum(rows, { outcome: 'empty' })).toBe(1);
    expect(meter.sum(rows, { outcome: 'failed' })).toBe(1);
    expect(meter.sum(rows, { outcome: 'skipped' })).toBe(1);
    expect(meter.sum(rows)).toBe(4);
  });
});

describe('recordWebhookDelivery', () => {
  it('counts accepted and refused deliveries by reason', () => {
    recordWebhookDelivery('signalled');
    recordWebhookDelivery('refused');
    recordWebhookDelivery('failed');
    expect(meter.of(name(M.webhookDeliveries)).map((r) => r.tags)).toEqual([
      { result: 'accepted', reason: 'signalled' },
      { result: 'refused', reason: 'bad_token' },
      { result: 'refused', reason: 'signal_failed' },
    ]);
  });
});
