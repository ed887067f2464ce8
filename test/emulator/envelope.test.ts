import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { sampleRows } from '../../src/emulator/index.js';
import { REQUEST_ID_RE, TIMESTAMP_RE } from '../../src/contract/index.js';
import { client, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start({ latency: { queuedMs: 5000, processingMs: 5000 } });
});
afterAll(() => em.stop());

describe('envelope and job object', () => {
  it('rule: every reply (success and failure) has success, data or error {code, message}, and a YYYY-MM-DDThh:mm:ss timestamp', async () => {
    const c = client(em);
    const ok = await c.get('/usage');
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body).sort()).toEqual(['data', 'success', 'timestamp']);
    expect(ok.body.success).toBe(true);
    expect(ok.body.timestamp).toMatch(TIMESTAMP_RE);

    for (const r of [
      await c.post('/person/enrichment', { email: 'not-an-email' }),
      await client(em, { key: 'nope-nope-nope', secret: 'nope-nope-nope' }).get('/usage'),
      await c.get('/no/such/path'),
    ]) {
      expect(r.body.success).toBe(false);
      expect(Object.keys(r.body).sort()).toEqual(['error', 'success', 'timestamp']);
      expect(Object.keys(r.body.error).sort()).toEqual(['code', 'message']);
      expect(typeof r.body.error.code).toBe('string');
      expect(r.body.timestamp).toMatch(TIMESTAMP_RE);
    }
  });

  it('rule: the acknowledgement carries request_id (hex_unixseconds_smallint), status queued and a message naming the GET', async () => {
    const c = client(em);
    const [row] = sampleRows({ rows: 1, dataset: em.options.dataset });
    const before = Math.floor(Date.now() / 1000);
    const ack = await c.post('/person/enrichment', { email: row.email });
    expect(ack.status).toBe(202);
    const d = ack.body.data;
    expect(Object.keys(d).sort()).toEqual(['message', 'request_id', 'status']);
    expect(d.request_id).toMatch(REQUEST_ID_RE);
    const [hex, secs, n] = d.request_id.split('_');
    expect(hex.length).toBeGreaterThanOrEqual(16);
    expect(Math.abs(Number(secs) - before)).toBeLessThanOrEqual(2);
    expect(Number(n)).toBeLessThan(10_000);
    expect(d.status).toBe('queued');
    expect(d.message).toContain(`GET /person/enrichment?request_id=${d.request_id}`);
  });

  it('rule: a completed poll carries request_id, status, completed, result, error null, created_on and completed_on', async () => {
    const c = client(em);
    const [row] = sampleRows({ rows: 1, dataset: em.options.dataset });
    const ack = await c.post('/person/enrichment', { email: row.email });
    const running = await c.get(`/person/enrichment?request_id=${ack.body.data.request_id}`);
    expect(running.status).toBe(202);
    expect(running.body.data.completed).toBe(false);
    expect(['queued', 'processing']).toContain(running.body.data.status);
    const done = await c.waitDone('/person/enrichment', ack.body.data.request_id);
    expect(done.status).toBe(200);
    const d = done.body.data;
    expect(Object.keys(d).sort()).toEqual([
      'completed',
      'completed_on',
      'created_on',
      'error',
      'request_id',
      'result',
      'status',
    ]);
    expect(d).toMatchObject({
      request_id: ack.body.data.request_id,
      status: 'completed',
      completed: true,
      error: null,
    });
    expect(d.created_on).toMatch(TIMESTAMP_RE);
    expect(d.completed_on).toMatch(TIMESTAMP_RE);
    expect(d.completed_on >= d.created_on).toBe(true);
  });
});
