import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { ENDPOINTS, ASYNC_ENDPOINTS, REQUEST_ID_RE } from '../../src/contract/index.js';
import { datasetFor } from '../../src/emulator/dataset/dataset.js';
import { admin, client, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
  // person_osint is restricted: grant it to the dev key so the walk covers it too.
  await admin(em)('PATCH', '/v1/api-keys/dev', { restricted_access: ['person_osint'] });
});
afterAll(() => em.stop());

/** A valid input for each endpoint, built from a known person and company of the dataset. */
function validInput(name: string): Record<string, unknown> {
  const d = datasetFor(em.options.seed, em.options.dataset);
  const p = d.people.find((x) => x.businessEmail && x.social.linkedin)!;
  const c = d.currentCompany(p)!;
  const email = p.businessEmail!;
  const url = p.social.linkedin.url;
  const byName: Record<string, Record<string, unknown>> = {
    person_search: { query: 'engineer' },
    person_lookup_fields: { email, fields: ['displayname', 'mobile'] },
    person_newsfeed: { social_media_url: url },
    person_ask: { question: 'Where does this person work?', email },
    company_search: { industry: c.industry },
    company_enrichment: { domain: c.domain },
    person_connection_mapping: { social_media_urls: [url] },
    person_newsfeed_lookup: { social_media_url: url },
    person_single_social_lookup: { social_media_url: url },
    person_discovery: { query: 'engineer' },
    person_discover: { keywords: 'engineer' },
    person_ask_lookup: { question: 'What is their title?', email },
    company_needs: { company_name: c.name, content: 'cloud' },
    company_funding: { company_domain: c.domain },
    company_funders: { company_name: c.name },
    company_discovery: { query: c.industry },
    company_checkseller: { company_name: c.name },
    company_checkfeature: { company_name: c.name },
    company_employees: { company_name: c.name },
    company_intent: { company_domain: c.domain },
    company_competitor_engagements: { company_name: c.name },
    person_enrichment_feedback: { request_id: 'x', correct: true },
  };
  return byName[name] ?? { email };
}

describe('every endpoint of the catalogue', () => {
  it('rule: each async POST validates first (400 invalid_request naming the field), then answers 202 queued/processing; its GET polls to completed', async () => {
    const c = client(em);
    const strict = ASYNC_ENDPOINTS.filter((e) => e.name !== 'person_search');
    for (const e of ASYNC_ENDPOINTS) {
      // A wrongly typed callback_url is invalid on every endpoint; it names the field.
      const bad = await c.post(e.path, { ...validInput(e.name), callback_url: 42 });
      expect(bad.status, e.path).toBe(400);
      expect(bad.body.error.code, e.path).toBe('invalid_request');
      expect(bad.body.error.message, e.path).toContain('callback_url');

      const ack = await c.post(e.path, validInput(e.name));
      expect(ack.status, e.path).toBe(202);
      expect(ack.body.data.request_id).toMatch(REQUEST_ID_RE);
      expect(e.polling === 'person_search' ? ['processing'] : ['queued']).toContain(
        ack.body.data.status,
      );
      const done = await c.waitDone(e.path, ack.body.data.request_id);
      expect(done.status, e.path).toBe(200);
      expect(done.body.data.completed, e.path).toBe(true);
      expect(['completed', 'exhausted'], e.path).toContain(done.body.data.status);
      const key = e.resultPath === 'data.results' ? 'results' : 'result';
      expect(done.body.data, e.path).toHaveProperty(key);
    }
    expect(strict.length + 1).toBe(ASYNC_ENDPOINTS.length);
  });

  it('rule: a missing required input is a 400 invalid_request whose message names the field', async () => {
    const c = client(em);
    const r = await c.post('/person/newsfeed', { limit: 5 });
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({
      code: 'invalid_request',
      message: 'social_media_url is required',
    });
    const ask = await c.post('/person/ask', { email: 'a@b.co' });
    expect(ask.body.error.message).toBe('question is required');
    const unknownParam = await c.post('/person/enrichment', { email: 'a@b.co', colour: 'blue' });
    expect(unknownParam.body.error.message).toBe('1 key is not a parameter of this endpoint');
    const range = await c.post('/company/search', { industry: 'Software', max_results: 51 });
    expect(range.body.error.message).toBe('max_results must be at most 50');
  });

  it('rule: POST /person/enrichment/feedback answers 200 at once with no request_id', async () => {
    const r = await client(em).post(
      '/person/enrichment/feedback',
      validInput('person_enrichment_feedback'),
    );
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data).not.toHaveProperty('request_id');
    expect(ENDPOINTS.find((e) => e.path === '/person/enrichment/feedback')?.polling).toBe('sync');
  });

  it('rule: GET with request_id polls; a poll without request_id is a 400 and an unknown path is a 404 not_found', async () => {
    const c = client(em);
    const r = await c.get('/person/enrichment');
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({ code: 'invalid_request', message: 'request_id is required' });
    const nf = await c.get('/person/nothing-here');
    expect(nf.status).toBe(404);
    expect(nf.body.error.code).toBe('not_found');
    const unknownId = await c.get(
      '/person/enrichment?request_id=0123456789abcdef0123456789abcdef_1700000000_1',
    );
    expect(unknownId.status).toBe(404);
    expect(unknownId.body.error.code).toBe('request_not_found');
  });

  it('rule: jobs move queued -> processing -> completed after the configured latency', async () => {
    const slow = await start({ timeScale: 1, latency: { queuedMs: 150, processingMs: 300 } });
    try {
      const c = client(slow);
      const email = datasetFor(slow.options.seed, slow.options.dataset).people.find(
        (p) => p.businessEmail,
      )!.businessEmail!;
      const t0 = Date.now();
      const ack = await c.post('/person/enrichment', { email });
      const seen: string[] = [];
      for (;;) {
        const r = await c.get(`/person/enrichment?request_id=${ack.body.data.request_id}`);
        if (seen.at(-1) !== r.body.data.status) seen.push(r.body.data.status);
        if (r.body.data.completed) break;
        await new Promise((res) => setTimeout(res, 20));
      }
      expect(seen).toEqual(['queued', 'processing', 'completed']);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(440);
    } finally {
      await slow.stop();
    }
  });
});
