// Single calls and the result cache, against the real dev server and the emulator over HTTP: a
// fresh found or empty result answers a repeated call with no request; refresh and a maximum age
// fetch again; failures are never kept; a store that cannot be reached never fails a call.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEndpoint } from '../../src/contract/index.js';
import { sampleRows } from '../../src/emulator/index.js';
import {
  envConfig,
  startCallEnv,
  withCallWorker,
  type CallEnv,
  callFailureOf,
} from './call-env.js';

let env: CallEnv;
// Each test its own person, so no test is answered by another's entry.
const people = sampleRows({ rows: 8, unknownShare: 0 }).map((r) => r.email);
const SUBMIT = 'POST /person/enrichment';

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** The env with a worker on a store of its own (a fresh embedded file). */
const withOwnStore = (): CallEnv => {
  const dataDir = mkdtempSync(join(tmpdir(), 'pcds-call-cache-'));
  return { ...env, config: envConfig(env.emulator, env.proxy.url, { PCDS_DATA_DIR: dataDir }) };
};
const submits = () => env.proxy.seen(SUBMIT).length;

describe('a call and the result cache', () => {
  it('the same call twice sends one submit; the second is the first result, cached, with its request id', async () => {
    // The client's default: use the cache.
    await withCallWorker(
      withOwnStore(),
      async (client) => {
        const before = submits();
        const first = await client.call('person_enrichment', { email: people[0] });
        expect(first).toMatchObject({ outcome: 'found' });
        expect(first).not.toHaveProperty('cached');
        const second = await client.call('person_enrichment', { email: people[0] });
        expect(submits() - before).toBe(1);
        expect(second).toMatchObject({
          outcome: 'found',
          cached: true,
          requestId: first.requestId,
          status: first.status,
        });
        if (first.outcome !== 'found' || second.outcome !== 'found') return;
        expect(second.result).toEqual(first.result);
        expect(Date.parse(second.fetchedAt!)).toBeLessThanOrEqual(Date.now());
        expect(Date.now() - Date.parse(second.fetchedAt!)).toBeLessThan(60_000);
        // No job ran for it: no timing.
        expect(second).not.toHaveProperty('timing');
      },
      undefined,
      {},
    );
  });

  it('an empty result is cached too', async () => {
    await withCallWorker(
      withOwnStore(),
      async (client) => {
        const params = { email: 'nobody.cached@unknown.pcds.dev' };
        const before = submits();
        const first = await client.call('person_enrichment', params);
        const second = await client.call('person_enrichment', params);
        expect(first).toMatchObject({ outcome: 'empty' });
        expect(second).toMatchObject({
          outcome: 'empty',
          cached: true,
          requestId: first.requestId,
        });
        expect(submits() - before).toBe(1);
      },
      undefined,
      {},
    );
  });

  it('refresh sends again and its result replaces the entry', async () => {
    await withCallWorker(
      withOwnStore(),
      async (client) => {
        const params = { email: people[1] };
        const before = submits();
        const first = await client.call('person_enrichment', params);
        const renewed = await client.call('person_enrichment', params, { cache: 'refresh' });
        expect(submits() - before).toBe(2);
        expect(renewed).not.toHaveProperty('cached');
        expect(renewed.requestId).not.toBe(first.requestId);
        const after = await client.call('person_enrichment', params);
        expect(submits() - before).toBe(2);
        expect(after).toMatchObject({ cached: true, requestId: renewed.requestId });
      },
      undefined,
      {},
    );
  });

  it('a maximum age re-fetches an older entry (0: every time) and the new result replaces it', async () => {
    await withCallWorker(
      withOwnStore(),
      async (client) => {
        const params = { email: people[2] };
        const before = submits();
        const first = await client.call('person_enrichment', params);
        const zero = await client.call('person_enrichment', params, { cache: { maxAge: 0 } });
        expect(submits() - before).toBe(2);
        expect(zero).not.toHaveProperty('cached');
        await new Promise((r) => setTimeout(r, 400));
        const old = await client.call('person_enrichment', params, { cache: { maxAge: 200 } });
        expect(submits() - before).toBe(3);
        expect(old).not.toHaveProperty('cached');
        expect(new Set([first.requestId, zero.requestId, old.requestId]).size).toBe(3);
        // Within its age, the newest entry answers.
        const young = await client.call('person_enrichment', params, { cache: { maxAge: '1h' } });
        expect(submits() - before).toBe(3);
        expect(young).toMatchObject({ cached: true, requestId: old.requestId });
      },
      undefined,
      {},
    );
  });

  it('a call with the cache off neither reads nor fills it', async () => {
    await withCallWorker(
      withOwnStore(),
      async (client) => {
        const params = { email: people[3] };
        const before = submits();
        await client.call('person_enrichment', params, { cache: false });
        const again = await client.call('person_enrichment', params, { cache: false });
        expect(again).not.toHaveProperty('cached');
        // Nothing was filled: the default call goes out too, and then fills it.
        const used = await client.call('person_enrichment', params);
        expect(used).not.toHaveProperty('cached');
        expect(submits() - before).toBe(3);
        const hit = await client.call('person_enrichment', params, { cache: false });
        expect(hit).not.toHaveProperty('cached');
        expect(submits() - before).toBe(4);
      },
      undefined,
      {},
    );
  });

  it('a failed call is not cached: the same call submits again and ends found', async () => {
    await withCallWorker(
      withOwnStore(),
      async (client) => {
        const params = { email: people[4] };
        const before = submits();
        env.emulator.setFaults({ jobSearchErrorShare: 1, paths: ['/person/enrichment'] });
        try {
          const err = await callFailureOf(client.call('person_enrichment', params));
          expect(err.code).toBe('search_error');
        } finally {
          env.emulator.setFaults({ jobSearchErrorShare: 0, paths: [] });
        }
        const next = await client.call('person_enrichment', params);
        expect(next).toMatchObject({ outcome: 'found' });
        expect(next).not.toHaveProperty('cached');
        expect(submits() - before).toBe(2);
      },
      undefined,
      {},
    );
  });

  it('a job that completed at its submit fills the cache: the next call is answered by it', async () => {
    // The completed job's envelope, read from the emulator, is the submit's reply.
    const endpoint = getEndpoint('person_enrichment');
    const service = env.clients.get(env.emulator.devKey.id);
    const params = { email: people[6] };
    const accepted = (await service.submit(endpoint, params)).body as {
      data: { request_id: string };
    };
    let completed: { data: { status: string; request_id: string } } | undefined;
    while (completed?.data.status !== 'completed') {
      await new Promise((r) => setTimeout(r, 100));
      completed = (await service.poll(endpoint, accepted.data.request_id)).body as typeof completed;
    }
    env.proxy.script(SUBMIT, [{ status: 200, body: completed }]);
    await withCallWorker(
      withOwnStore(),
      async (client) => {
        const polls = () => env.proxy.seen('GET /person/enrichment').length;
        const [submitsBefore, pollsBefore] = [submits(), polls()];
        const first = await client.call('person_enrichment', params);
        expect(first).toMatchObject({ outcome: 'found', requestId: accepted.data.request_id });
        expect(first).not.toHaveProperty('cached');
        const second = await client.call('person_enrichment', params);
        expect(second).toMatchObject({ cached: true, requestId: accepted.data.request_id });
        if (first.outcome === 'found' && second.outcome === 'found')
          expect(second.result).toEqual(first.result);
        expect([submits() - submitsBefore, polls() - pollsBefore]).toEqual([1, 0]);
      },
      undefined,
      {},
    );
  });

  it('a store that cannot be reached never fails a call: each goes to the service', async () => {
    // Nothing listens on port 1: every connection to the store is refused.
    const config = envConfig(env.emulator, env.proxy.url, {
      PCDS_STORE_URL: 'postgres://pcds:pcds@127.0.0.1:1/pcds',
    });
    await withCallWorker(
      { ...env, config },
      async (client) => {
        const before = submits();
        const first = await client.call('person_enrichment', { email: people[5] });
        const second = await client.call('person_enrichment', { email: people[5] });
        expect(first).toMatchObject({ outcome: 'found' });
        expect(second).toMatchObject({ outcome: 'found' });
        expect(second).not.toHaveProperty('cached');
        expect(second.requestId).not.toBe(first.requestId);
        expect(submits() - before).toBe(2);
      },
      undefined,
      {},
    );
  });
});
