import { describe, expect, it } from 'vitest';
import { readDelivery } from '../../../src/webhooks/delivery.js';
import { RecentDeliveries } from '../../../src/webhooks/recent-deliveries.js';

const RID = 'a1b2c3d4e5f60718293a4b5c6d7e8f90_1764000000_3';

describe('readDelivery', () => {
  it('reads the request_id of an enveloped delivery and keeps the body as received', () => {
    const body = {
      success: true,
      data: { request_id: RID, status: 'completed', result: { a: 1 } },
    };
    expect(readDelivery(JSON.stringify(body))).toEqual({ ok: true, requestId: RID, body });
  });

  it('reads a failed delivery that names its job', () => {
    const body = {
      success: false,
      data: { request_id: RID, status: 'failed' },
      error: { code: 'search_error', message: 'x' },
    };
    expect(readDelivery(JSON.stringify(body))).toMatchObject({ ok: true, requestId: RID });
  });

  it('accepts a failure envelope without data: it names no job, so the call confirms it by polling', () => {
    const body = {
      success: false,
      error: { code: 'internal_error', message: 'x' },
      timestamp: '2026-11-21T10:00:00',
    };
    expect(readDelivery(JSON.stringify(body))).toEqual({ ok: true, body });
  });

  it('reads the flat variant (job fields at the top level)', () => {
    expect(readDelivery(JSON.stringify({ request_id: RID, status: 'completed' }))).toMatchObject({
      ok: true,
      requestId: RID,
    });
  });

  it.each([
    ['{"request_id": ', 'not_json'],
    ['"just a string"', 'not_an_envelope'],
    ['[1, 2]', 'not_an_envelope'],
    ['{"email": "a@b.io"}', 'not_an_envelope'],
    ['{"success": true, "data": {"status": "completed"}}', 'no_request_id'],
    ['{"success": false}', 'no_request_id'],
    ['{"success": true, "data": {"request_id": 42}}', 'no_request_id'],
    [JSON.stringify({ success: true, data: { request_id: 'x y <script>' } }), 'no_request_id'],
    [JSON.stringify({ success: true, data: { request_id: 'a'.repeat(201) } }), 'no_request_id'],
  ])('refuses %s as %s', (raw, reason) => {
    expect(readDelivery(raw)).toEqual({ ok: false, reason });
  });
});

describe('RecentDeliveries', () => {
  it('remembers (workflow, request) pairs and forgets the oldest beyond its capacity', () => {
    const recent = new RecentDeliveries(2);
    recent.add('w1', 'r1');
    recent.add('w2', 'r1');
    expect(recent.has('w1', 'r1')).toBe(true);
    expect(recent.has('w1', 'r2')).toBe(false);
    recent.add('w1', 'r1'); // refreshed: w2 is now the oldest
    recent.add('w3', 'r1');
    expect(recent.size).toBe(2);
    expect(recent.has('w2', 'r1')).toBe(false);
    expect(recent.has('w1', 'r1')).toBe(true);
    expect(recent.has('w3', 'r1')).toBe(true);
  });
});
