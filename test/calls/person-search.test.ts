// Person search over several pages: one POST per page, rows read by GET, stop at the maximum.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startCallEnv, withCallWorker, type CallEnv } from './call-env.js';

let env: CallEnv;
beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

it('pages a search with GET reads, one POST per page, and stops at maxResults', async () => {
  await withCallWorker(env, async (client) => {
    const from = Date.now();
    const result = await client.searchPeople(
      { query: 'engineer' },
      { maxResults: 25, pageSize: 10 },
    );
    expect(result.rows).toHaveLength(25);
    expect(result.pages).toBe(3);
    expect(result.stoppedBy).toBe('max_results');
    const ids = result.rows.map((r) => JSON.stringify(r));
    expect(new Set(ids).size).toBe(25);
    const seen = env.proxy.seen().filter((s) => s.at >= from && s.path === '/person/search');
    // One POST per page (the first search, then two page requests), never a replay.
    expect(seen.filter((s) => s.method === 'POST')).toHaveLength(3);
    expect(seen.filter((s) => s.method === 'GET').length).toBeGreaterThanOrEqual(3);
  });
});

it('stops when has_more is false', async () => {
  await withCallWorker(env, async (client) => {
    const result = await client.searchPeople(
      { query: 'engineer' },
      { maxResults: 5000, pageSize: 100 },
    );
    expect(result.stoppedBy === 'no_more' || result.stoppedBy === 'offset_limit').toBe(true);
    expect(result.returned).toBe(result.rows.length);
  });
});
