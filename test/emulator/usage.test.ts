import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { admin, client, newKey, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

describe('GET /usage', () => {
  it('rule: /usage is synchronous and free and returns every field of Usage statistics', async () => {
    const k = await newKey(em, { credits: 50 });
    const c = client(em, k);
    const now = new Date();
    const r = await c.get('/usage');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      month: now.getUTCMonth() + 1,
      year: now.getUTCFullYear(),
      period: `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`,
      credits_used: { total: 0, search: 0, enrichment: 0 },
      requests_count: { total: 0, search: 0, enrichment: 0 },
      limits: { monthly_allocation: 50, available_credits: 50, is_unlimited: false },
      breakdown: {
        search_results_returned: 0,
        enrichments_performed: 0,
        total_credits_consumed: 0,
      },
    });
    await c.get('/usage');
    expect((await c.get('/usage')).body.data.limits.available_credits).toBe(50);
    expect(em.stats(k.id).creditsCharged).toBe(0);
  });

  it('rule: /usage rejects bad and future periods with invalid_month, invalid_year and invalid_date', async () => {
    const c = client(em);
    for (const [q, code] of [
      ['month=0', 'invalid_month'],
      ['month=13', 'invalid_month'],
      ['month=abc', 'invalid_month'],
      ['year=2019', 'invalid_year'],
      ['year=2031', 'invalid_year'],
      ['year=20x5', 'invalid_year'],
      [`month=12&year=2030`, 'invalid_date'],
    ] as const) {
      const r = await c.get(`/usage?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code, q).toBe(code);
    }
    const past = await c.get('/usage?month=1&year=2020');
    expect(past.status).toBe(200);
    expect(past.body.data.period).toBe('2020-01');
  });

  it('rule: /usage answers its own 401/403 codes: missing_api_key, missing_api_secret, invalid_api_key, invalid_api_secret, api_key_disabled', async () => {
    const k = await newKey(em);
    const raw = (h: Record<string, string>) =>
      fetch(`${em.url}/usage`, { headers: h }).then(async (r) => ({
        status: r.status,
        code: ((await r.json()) as any).error?.code,
      }));
    expect(await raw({})).toEqual({ status: 401, code: 'missing_api_key' });
    expect(await raw({ 'x-api-key': k.key })).toEqual({ status: 401, code: 'missing_api_secret' });
    expect(await raw({ 'x-api-key': 'pcds_unknown_key', 'x-api-secret': k.secret })).toEqual({
      status: 401,
      code: 'invalid_api_key',
    });
    expect(await raw({ 'x-api-key': k.key, 'x-api-secret': 'wrong-secret' })).toEqual({
      status: 401,
      code: 'invalid_api_secret',
    });
    await admin(em)('PATCH', `/v1/api-keys/${k.id}`, { disabled: true });
    expect(await raw({ 'x-api-key': k.key, 'x-api-secret': k.secret })).toEqual({
      status: 403,
      code: 'api_key_disabled',
    });
  });
});
