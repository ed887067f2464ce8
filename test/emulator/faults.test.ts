import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { admin, client, sleep, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

const unknown = { email: 'someone@unknown.pcds.dev' };

describe('faults', () => {
  it('rule: faults are set at start or at run time through PUT /admin/faults; a share of 503 service_unavailable', async () => {
    const started = await start({ faults: { unavailableShare: 1 } });
    try {
      const r = await client(started).get('/usage');
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('service_unavailable');
    } finally {
      await started.stop();
    }
    const a = admin(em);
    const put = await a('PUT', '/admin/faults', { unavailableShare: 0.5 });
    expect(put.status).toBe(200);
    expect((await a('GET', '/admin/faults')).body.data.unavailableShare).toBe(0.5);
    const c = client(em);
    const statuses = [];
    for (let i = 0; i < 40; i++) statuses.push((await c.get('/usage')).status);
    const n503 = statuses.filter((s) => s === 503).length;
    expect(n503).toBeGreaterThan(5);
    expect(n503).toBeLessThan(35);
    expect(statuses.filter((s) => s !== 503 && s !== 200)).toEqual([]);
    const bad = await a('PUT', '/admin/faults', { unavailableShare: 2 });
    expect(bad.status).toBe(400);
    await a('PUT', '/admin/faults', {});
  });

  it('rule: 429 bursts answer rate_limit_exceeded with a Retry-After after which a request succeeds', async () => {
    const fast = await start({ timeScale: 1 });
    try {
      await admin(fast)('PUT', '/admin/faults', { rateLimitBurst: { durationMs: 700 } });
      const c = client(fast);
      const r = await c.get('/usage');
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe('rate_limit_exceeded');
      const wait = Number(r.headers.get('retry-after'));
      expect(wait).toBe(1);
      await sleep(wait * 1000);
      expect((await c.get('/usage')).status).toBe(200);
    } finally {
      await fast.stop();
    }
  });

  it.each(['at run time', 'at start-up'] as const)(
    'rule: a burst set to start from the first request lasts its full duration from that request (%s)',
    async (when) => {
      const burst = { rateLimitBurst: { durationMs: 1_500, fromFirstRequest: true } };
      const fast = await start(
        when === 'at start-up' ? { timeScale: 1, faults: burst } : { timeScale: 1 },
      );
      try {
        if (when === 'at run time') await admin(fast)('PUT', '/admin/faults', burst);
        // Quiet for longer than the burst: it has not started yet.
        await sleep(1_700);
        const c = client(fast);
        const first = await c.get('/usage');
        expect(first.status).toBe(429);
        expect(Number(first.headers.get('retry-after'))).toBe(2);
        await sleep(800);
        expect((await c.get('/usage')).status).toBe(429);
        await sleep(900);
        expect((await c.get('/usage')).status).toBe(200);
      } finally {
        await fast.stop();
      }
    },
  );

  it('rule: jobs fail with search_error or internal_error (HTTP 500), or end with a stored 429 (HTTP 200, success false, no Retry-After), or not_found', async () => {
    const c = client(em);
    const a = admin(em);
    const run = async () => {
      const ack = await c.post('/person/enrichment', unknown);
      return c.waitDone('/person/enrichment', ack.body.data.request_id);
    };
    await a('PUT', '/admin/faults', { jobSearchErrorShare: 1 });
    const se = await run();
    expect([se.status, se.body.success, se.body.error.code]).toEqual([500, false, 'search_error']);
    await a('PUT', '/admin/faults', { jobInternalErrorShare: 1 });
    const ie = await run();
    expect([ie.status, ie.body.error.code]).toEqual([500, 'internal_error']);
    await a('PUT', '/admin/faults', { jobRateLimitedShare: 1 });
    const rl = await run();
    expect([rl.status, rl.body.success, rl.body.error.code]).toEqual([
      200,
      false,
      'rate_limit_exceeded',
    ]);
    expect(rl.headers.get('retry-after')).toBeNull();
    await a('PUT', '/admin/faults', { jobNotFoundShare: 1 });
    const nf = await run();
    expect(nf.status).toBe(200);
    expect(nf.body.data).toMatchObject({
      status: 'not_found',
      completed: true,
      error: { code: 'not_found' },
    });
    await a('PUT', '/admin/faults', {});
  });

  it('rule: slow replies, dropped connections and jobs that never finish', async () => {
    const c = client(em);
    const a = admin(em);
    // slowReplyMs is shortened by the time scale (100 times faster): 30 s becomes 300 ms.
    await a('PUT', '/admin/faults', { slowReplyShare: 1, slowReplyMs: 30_000 });
    const t0 = Date.now();
    expect((await c.get('/usage')).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    await a('PUT', '/admin/faults', { dropConnectionShare: 1 });
    await expect(c.get('/usage')).rejects.toThrow();
    await a('PUT', '/admin/faults', { jobNeverFinishShare: 1 });
    const ack = await c.post('/person/enrichment', unknown);
    await a('PUT', '/admin/faults', {});
    await sleep(100); // ten times the scaled latency
    const r = await c.get(`/person/enrichment?request_id=${ack.body.data.request_id}`);
    expect(r.status).toBe(202);
    expect(r.body.data).toMatchObject({ status: 'processing', completed: false });
  });

  it('rule: the time scale shrinks latencies and rate-limit windows together', async () => {
    const scaled = await start({
      timeScale: 200,
      latency: { queuedMs: 10_000, processingMs: 40_000 },
      limits: { enabled: true, perMinute: 2 },
    });
    try {
      const c = client(scaled);
      const t0 = Date.now();
      const ack = await c.post('/person/enrichment', unknown);
      // 50 s of latency 200 times faster is 250 ms; a minute window is 300 ms.
      await sleep(350);
      const done = await c.get(`/person/enrichment?request_id=${ack.body.data.request_id}`);
      expect(done.body.data.completed).toBe(true);
      expect(Date.now() - t0).toBeLessThan(2000);
      expect((await c.get('/usage')).status).toBe(200);
      const limited = await c.get('/usage');
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('1');
      await sleep(320);
      expect((await c.get('/usage')).status).toBe(200);
    } finally {
      await scaled.stop();
    }
  });
});
