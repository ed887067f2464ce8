import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { Dataset, datasetFor } from '../../src/emulator/dataset/dataset.js';
import { PROFILE_FIELDS } from '../../src/emulator/dataset/render.js';
import { client, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

describe('seeded dataset', () => {
  it('rule: the dataset is deterministic: the same seed gives the same records, another seed different ones', () => {
    const a = datasetFor(7, { people: 300, companies: 40 });
    // A fresh build (not the cached instance) of the same seed.
    const b = new Dataset(7, { people: 300, companies: 40 });
    const c = new Dataset(8, { people: 300, companies: 40 });
    expect(b.people.map((p) => p.businessEmail)).toEqual(a.people.map((p) => p.businessEmail));
    expect(b.companies.map((x) => x.domain)).toEqual(a.companies.map((x) => x.domain));
    expect(c.people.map((p) => p.displayname)).not.toEqual(a.people.map((p) => p.displayname));
    const d = datasetFor(em.options.seed, em.options.dataset);
    expect(d.people.length).toBe(2000);
    expect(new Set(d.people.map((p) => p.displayname)).size).toBeGreaterThan(1000);
    expect(d.people.filter((p) => p.phones.length).length).toBeGreaterThan(1000);
    expect(d.companies.some((x) => x.funding.investors.length > 0)).toBe(true);
  });

  it('rule: the same input always gives the same result, and a person profile carries exactly the documented fields', async () => {
    const c = client(em);
    const p = datasetFor(em.options.seed, em.options.dataset).people.find(
      (x) => x.phones.length && x.businessEmail,
    )!;
    const results = [];
    for (const input of [
      { email: p.businessEmail },
      { email: p.businessEmail },
      { phone: p.phones[0].fullphone },
    ]) {
      const ack = await c.post('/person/enrichment', input);
      results.push(
        (await c.waitDone('/person/enrichment', ack.body.data.request_id)).body.data.result,
      );
    }
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
    const profile = results[0];
    expect(Object.keys(profile).sort()).toEqual([...PROFILE_FIELDS].sort());
    expect(profile.displayname).toBe(p.displayname);
    for (const ph of profile.fullphone)
      expect(Object.keys(ph).sort()).toEqual(['fullphone', 'phone_type']);
    for (const o of profile.organizations)
      expect(Object.keys(o).sort()).toEqual(['is_current', 'name', 'title']);
    for (const s of Object.values<any>(profile.social_profiles)) {
      expect(Object.keys(s).sort()).toEqual(['followers', 'url']);
      expect(Number.isInteger(s.followers)).toBe(true);
    }
    expect(Number.isInteger(profile.total_experience_years)).toBe(true);
  });

  it('rule: an unknown identity completes with an empty result, which is free', async () => {
    const c = client(em);
    const before = em.stats().creditsCharged;
    const ack = await c.post('/person/enrichment', { email: 'nobody.at.all@unknown.pcds.dev' });
    const done = await c.waitDone('/person/enrichment', ack.body.data.request_id);
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({
      status: 'completed',
      completed: true,
      result: null,
      error: null,
    });
    const search = await c.post('/person/search', { query: 'zzqx unheardofword' });
    const page = await c.waitDone('/person/search', search.body.data.request_id);
    expect(page.body.data.results).toEqual([]);
    expect(em.stats().creditsCharged).toBe(before);
  });
});
