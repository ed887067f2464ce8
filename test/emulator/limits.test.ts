import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { client, newKey, sleep, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  // Windows 50 times faster: a minute is 1.2 s, an hour 72 s.
  em = await start({ timeScale: 50, limits: { enabled: true } });
});
afterAll(() => em.stop());

describe('rate limits', () => {
  it('rule: 100 requests a minute per key by default, polls counted, then 429 rate_limit_exceeded with Retry-After', async () => {
    // Real-time windows here: 100 requests must all land inside one minute on a busy machine.
    const real = await start({
      timeScale: 1,
      latency: { queuedMs: 0, processingMs: 0 },
      limits: { enabled: true },
    });
    try {
      const k = await newKey(real);
      const c = client(real, k);
      const ack = await c.post('/person/enrichment', { email: 'someone@unknown.pcds.dev' });
      expect(ack.status).toBe(202);
      const statuses: number[] = [];
      // 99 polls: with the submit, exactly 100 requests fit the minute window.
      const polls = await Promise.all(
        Array.from({ length: 99 }, () =>
          c.get(`/person/enrichment?request_id=${ack.body.data.request_id}`),
        ),
      );
      statuses.push(...polls.map((r) => r.status));
      expect(statuses.filter((s) => s === 429)).toHaveLength(0);
      const over = await c.get('/usage');
      expect(over.status).toBe(429);
      expect(over.body.error.code).toBe('rate_limit_exceeded');
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(real.stats(k.id).rateLimited).toBe(1);
    } finally {
      await real.stop();
    }
  });

  it('rule: a retry after Retry-After succeeds, and rejected requests do not count', async () => {
    const k = await newKey(em, { rate_limits: { per_minute: 5, per_hour: 1000 } });
    const c = client(em, k);
    for (let i = 0; i < 5; i++) expect((await c.get('/usage')).status).toBe(200);
    const first = await c.get('/usage');
    expect(first.status).toBe(429);
    // Hammering while throttled does not extend the wait (rejections are not counted).
    for (let i = 0; i < 5; i++) expect((await c.get('/usage')).status).toBe(429);
    const wait = Number(first.headers.get('retry-after'));
    expect(Number.isInteger(wait)).toBe(true);
    expect(wait).toBe(2); // ceil(1.2 s window)
    await sleep(wait * 1000);
    expect((await c.get('/usage')).status).toBe(200);
    expect(em.stats(k.id).rateLimited).toBe(6);
  });

  it('rule: the hour window (1,000 by default, configurable per key) has its own Retry-After', async () => {
    const k = await newKey(em, { rate_limits: { per_minute: 100, per_hour: 3 } });
    const c = client(em, k);
    for (let i = 0; i < 3; i++) expect((await c.get('/usage')).status).toBe(200);
    const r = await c.get('/usage');
    expect(r.status).toBe(429);
    const wait = Number(r.headers.get('retry-after'));
    // The hour is 72 s at this time scale: the wait is the hour window, not the minute one.
    expect(wait).toBeGreaterThanOrEqual(71);
    expect(wait).toBeLessThanOrEqual(73);
    expect(em.options.limits).toMatchObject({ perMinute: 100, perHour: 1000 });
  });
});
