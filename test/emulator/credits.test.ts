import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { datasetFor } from '../../src/emulator/dataset/dataset.js';
import { admin, client, newKey, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start({ prices: { enrichment: 2, premium_enrichment: 5 } });
});
afterAll(() => em.stop());

const known = () =>
  datasetFor(em.options.seed, em.options.dataset).people.filter((p) => p.businessEmail);

describe('credits', () => {
  it('rule: a positive balance is required before a request is accepted (402 insufficient_credits)', async () => {
    const k = await newKey(em, { credits: 0 });
    const c = client(em, k);
    const r = await c.post('/person/enrichment', { email: known()[0].businessEmail });
    expect(r.status).toBe(402);
    expect(r.body.error.code).toBe('insufficient_credits');
    // Top-up is an update of the key.
    await admin(em)('PATCH', `/v1/api-keys/${k.id}`, { add_credits: 2 });
    const ok = await c.post('/person/enrichment', { email: known()[0].businessEmail });
    expect(ok.status).toBe(202);
    await c.waitDone('/person/enrichment', ok.body.data.request_id);
    // The balance is now 0: the next submit is refused, the poll and /usage still answer.
    expect((await c.post('/person/enrichment', { email: known()[1].businessEmail })).status).toBe(
      402,
    );
    expect((await c.get(`/person/enrichment?request_id=${ok.body.data.request_id}`)).status).toBe(
      200,
    );
    expect((await c.get('/usage')).body.data.limits.available_credits).toBe(0);
  });

  it('rule: only non-empty results are charged; polls and /usage are free; /person/enrich costs more; /usage reports exactly what was charged', async () => {
    const k = await newKey(em, { credits: 1000 });
    const c = client(em, k);
    const people = known();
    const run = async (path: string, body: unknown) => {
      const ack = await c.post(path, body);
      expect(ack.status).toBe(202);
      return c.waitDone(path, ack.body.data.request_id);
    };
    await run('/person/enrichment', { email: people[0].businessEmail });
    await run('/person/enrichment', { email: people[1].businessEmail });
    await run('/person/enrichment', { email: 'nobody@unknown.pcds.dev' });
    await run('/person/enrich', { email: people[2].businessEmail });
    const page = await run('/person/search', { query: 'engineer', limit: 4, show_emails: true });
    for (let i = 0; i < 5; i++)
      await c.get(`/person/search?request_id=${page.body.data.request_id}&offset=0&limit=4`);
    for (let i = 0; i < 3; i++) await c.get('/usage');
    const expected = 2 + 2 + 0 + 5 + (3 + 1);
    const u = (await c.get('/usage')).body.data;
    expect(u.credits_used).toEqual({ total: expected, search: 4, enrichment: 9 });
    expect(u.requests_count).toEqual({ total: 5, search: 1, enrichment: 4 });
    expect(u.breakdown).toEqual({
      search_results_returned: 4,
      enrichments_performed: 3,
      total_credits_consumed: expected,
    });
    expect(u.limits).toEqual({
      monthly_allocation: 1000,
      available_credits: 1000 - expected,
      is_unlimited: false,
    });
    expect(em.stats(k.id).creditsCharged).toBe(expected);
  });

  it('the development key takes credits: null as an unlimited balance, and 100,000 when it says nothing', async () => {
    // One found result costs the whole default balance: a second submit shows which it was.
    const prices = { enrichment: 100_000 };
    const devKey = { key: 'pcds_dev_unlimited', secret: 'pcds_dev_unlimited_secret' };
    const secondSubmit = async (options: Parameters<typeof start>[0]) => {
      const emu = await start({ prices, ...options });
      try {
        const c = client(emu);
        const people = datasetFor(emu.options.seed, emu.options.dataset).people.filter(
          (p) => p.businessEmail,
        );
        const first = await c.post('/person/enrichment', { email: people[0].businessEmail });
        expect(first.status).toBe(202);
        await c.waitDone('/person/enrichment', first.body.data.request_id);
        const usage = (await c.get('/usage')).body.data.limits;
        const second = await c.post('/person/enrichment', { email: people[1].businessEmail });
        return { status: second.status, unlimited: usage.is_unlimited };
      } finally {
        await emu.stop();
      }
    };
    expect(await secondSubmit({ devKey: { ...devKey, credits: null } })).toEqual({
      status: 202,
      unlimited: true,
    });
    expect(await secondSubmit({ devKey })).toEqual({ status: 402, unlimited: false });
  });
});
