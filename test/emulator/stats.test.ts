import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { datasetFor } from '../../src/emulator/dataset/dataset.js';
import { admin, client, newKey, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start({ limits: { enabled: true, perMinute: 6 } });
});
afterAll(() => em.stop());

describe('observability', () => {
  it('rule: /admin/stats counts per key requests by path and method, 429s, credits charged, jobs submitted and duplicate submits; reset clears them', async () => {
    const k = await newKey(em);
    const c = client(em, k);
    const email = datasetFor(em.options.seed, em.options.dataset).people.find(
      (p) => p.businessEmail,
    )!.businessEmail;
    const a1 = await c.post('/person/enrichment', { email });
    await c.post('/person/enrichment', { email });
    await c.post('/person/enrichment', { email: 'other@unknown.pcds.dev' });
    await c.waitDone('/person/enrichment', a1.body.data.request_id, '', 5000);
    let n = 0;
    while ((await c.get('/usage')).status !== 429) n++;
    const s = (await admin(em)('GET', `/admin/stats/${k.id}`)).body.data;
    expect(s.jobsSubmitted).toBe(3);
    expect(s.duplicateSubmits).toBe(1);
    expect(s.rateLimited).toBe(1);
    expect(s.creditsCharged).toBe(2);
    expect(s.requests['POST /person/enrichment']).toBe(3);
    const polls = s.requests['GET /person/enrichment'];
    expect(polls).toBeGreaterThanOrEqual(1);
    expect(3 + polls + n).toBe(6);
    expect(s.requests['GET /usage']).toBe(n + 1);
    const all = (await admin(em)('GET', '/admin/stats')).body.data.keys;
    expect(all[k.id].jobsSubmitted).toBe(3);
    expect((await admin(em)('POST', '/admin/stats/reset', { key_id: k.id })).status).toBe(200);
    const after = (await admin(em)('GET', `/admin/stats/${k.id}`)).body.data;
    expect(after).toMatchObject({
      requests: {},
      rateLimited: 0,
      creditsCharged: 0,
      jobsSubmitted: 0,
      duplicateSubmits: 0,
    });
  });
});
