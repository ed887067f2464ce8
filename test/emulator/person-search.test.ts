import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { client, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

const PRICE = { light: 1, medium: 2, premium: 3 };

async function search(c: ReturnType<typeof client>, input: Record<string, unknown>) {
  const ack = await c.post('/person/search', input);
  expect(ack.status, JSON.stringify(ack.body)).toBe(202);
  expect(ack.body.data.status).toBe('processing');
  const rid = ack.body.data.request_id as string;
  const done = await c.waitDone('/person/search', rid);
  return { rid, done };
}

describe('person search', () => {
  it('rule: query, structured parts, custom_filters, exclude and docid_whitelist narrow the rows', async () => {
    const c = client(em);
    const q = await search(c, { query: 'software engineers in Berlin', limit: 100 });
    expect(q.done.body.data.results.length).toBeGreaterThan(0);
    for (const r of q.done.body.data.results) {
      expect(r.location).toContain('Berlin');
    }
    const s = await search(c, {
      custom_filters: {},
      role: 'Engineer',
      geography: 'London',
      limit: 100,
    });
    expect(s.done.body.data.results.length).toBeGreaterThan(0);
    for (const r of s.done.body.data.results) {
      expect(r.current_title).toContain('Engineer');
      expect(r.location).toContain('London');
    }
    const f = await search(c, {
      custom_filters: { locations: ['Paris'], industries: ['Software'] },
      limit: 100,
    });
    expect(f.done.body.data.results.length).toBeGreaterThan(0);
    for (const r of f.done.body.data.results) expect(r.location).toContain('Paris');
    const ex = await search(c, {
      custom_filters: { locations: ['Paris'], industries: ['Software'] },
      exclude: { titles: ['Engineer'] },
      limit: 100,
    });
    for (const r of ex.done.body.data.results) expect(r.current_title).not.toContain('Engineer');
    const wl = await search(c, { docid_whitelist: ['p000003', 'p000007', 'p999999'] });
    expect(wl.done.body.data.results.map((r: any) => r.docid)).toEqual(['p000003', 'p000007']);
  });

  it('rule: paging by limit/offset, page, cursor and request_id; has_more and next_cursor; GET with only request_id reads offset 0', async () => {
    const c = client(em);
    const { rid, done } = await search(c, { query: 'engineer', limit: 5 });
    const total = done.body.data.total as number;
    expect(total).toBeGreaterThan(15);
    const first = done.body.data.results.map((r: any) => r.docid);
    expect(first).toHaveLength(5);
    expect(done.body.data).toMatchObject({
      status: 'completed',
      completed: true,
      has_more: true,
      offset: 0,
      limit: 5,
    });
    // A page POST on a finished search is fulfilled at once and carries no rows.
    const cur = await c.post('/person/search', { cursor: done.body.data.next_cursor });
    expect(cur.status).toBe(200);
    expect(cur.body.data).toMatchObject({
      request_id: rid,
      status: 'completed',
      completed: true,
      offset: 5,
      limit: 5,
      has_more: true,
    });
    expect(cur.body.data).not.toHaveProperty('results');
    const second = await c.get(`/person/search?request_id=${rid}&offset=5&limit=5`);
    const page2 = await c.post('/person/search', { request_id: rid, page: 2, limit: 5 });
    expect(page2.body.data.offset).toBe(5);
    const viaPage = await c.get(
      `/person/search?request_id=${rid}&offset=${page2.body.data.offset}&limit=5`,
    );
    expect(viaPage.body.data.results).toEqual(second.body.data.results);
    expect(second.body.data.results.map((r: any) => r.docid)).not.toEqual(first);
    // Only request_id: offset 0 again, whatever cursor POSTs came before.
    const again = await c.get(`/person/search?request_id=${rid}`);
    expect(again.body.data.results.map((r: any) => r.docid)).toEqual(first);
    // The last page is exhausted: no more rows, no cursor.
    const lastOffset = Math.min(total, 1000) - 2;
    const last = await c.get(`/person/search?request_id=${rid}&offset=${lastOffset}&limit=5`);
    expect(last.body.data).toMatchObject({
      status: 'exhausted',
      completed: true,
      has_more: false,
      next_cursor: null,
    });
    expect(last.body.data.results).toHaveLength(2);
  });

  it('rule: a search reports processing while running, then completed, or exhausted when the source has no more rows', async () => {
    // Ten times faster, 0.3 s + 0.5 s: long enough that the first poll lands while it runs, even on a loaded machine.
    const slow = await start({ timeScale: 10, latency: { queuedMs: 3000, processingMs: 5000 } });
    try {
      const c = client(slow);
      const ack = await c.post('/person/search', { query: 'engineer', limit: 3 });
      const running = await c.get(`/person/search?request_id=${ack.body.data.request_id}`);
      expect(running.status).toBe(202);
      expect(running.body.data).toMatchObject({ status: 'processing', completed: false });
      const done = await c.waitDone('/person/search', ack.body.data.request_id);
      expect(done.body.data.status).toBe('completed');
      const small = await c.post('/person/search', { docid_whitelist: ['p000001'], limit: 10 });
      const smallDone = await c.waitDone('/person/search', small.body.data.request_id);
      expect(smallDone.body.data).toMatchObject({ status: 'exhausted', has_more: false });
    } finally {
      await slow.stop();
    }
  });

  it('rule: show_* add contacts, require_* drop rows lacking them, enrich_results asks for both', async () => {
    const c = client(em);
    const plain = await search(c, { query: 'manager', limit: 20 });
    for (const r of plain.done.body.data.results) {
      expect(r).not.toHaveProperty('emails');
      expect(r).not.toHaveProperty('phone_numbers');
    }
    const req = await search(c, {
      query: 'manager',
      limit: 50,
      require_phone_numbers: true,
      show_phone_numbers: true,
    });
    expect(req.done.body.data.results.length).toBeGreaterThan(0);
    for (const r of req.done.body.data.results) expect(r.phone_numbers.length).toBeGreaterThan(0);
    expect(req.done.body.data.total).toBeLessThan(plain.done.body.data.total);
    const both = await search(c, { query: 'manager', limit: 5, enrich_results: true });
    for (const r of both.done.body.data.results) {
      expect(r).toHaveProperty('emails');
      expect(r).toHaveProperty('phone_numbers');
    }
  });

  it('rule: type tiers price pages differently and the light tier forces insights and high_freshness off', async () => {
    const c = client(em);
    for (const [type, price] of Object.entries(PRICE)) {
      const before = em.stats().creditsCharged;
      await search(c, { query: 'engineer', type });
      expect(em.stats().creditsCharged - before, type).toBe(price);
    }
    const before = em.stats().creditsCharged;
    const light = await search(c, {
      query: 'engineer',
      type: 'light',
      insights: true,
      high_freshness: true,
    });
    expect(em.stats().creditsCharged - before).toBe(PRICE.light);
    for (const r of light.done.body.data.results) expect(r).not.toHaveProperty('insights');
    const before2 = em.stats().creditsCharged;
    const premium = await search(c, { query: 'engineer', insights: true, high_freshness: true });
    expect(em.stats().creditsCharged - before2).toBe(PRICE.premium + 2 + 1);
    for (const r of premium.done.body.data.results) expect(typeof r.insights).toBe('string');
  });

  it('rule: each fulfilled page POST is billed once; GET page reads and polls are free', async () => {
    const c = client(em);
    const before = em.stats().creditsCharged;
    const { rid, done } = await search(c, { query: 'engineer', limit: 5, type: 'light' });
    expect(em.stats().creditsCharged - before).toBe(1);
    for (let i = 0; i < 3; i++) await c.get(`/person/search?request_id=${rid}&offset=0&limit=5`);
    expect(em.stats().creditsCharged - before).toBe(1);
    await c.post('/person/search', { cursor: done.body.data.next_cursor });
    expect(em.stats().creditsCharged - before).toBe(2);
    // A page past the last row is fulfilled but empty, and free.
    await c.post('/person/search', { request_id: rid, offset: 999, limit: 100 });
    expect(done.body.data.total).toBeLessThan(999);
    expect(em.stats().creditsCharged - before).toBe(2);
  });
});
