import { describe, expect, it } from 'vitest';
import { readDelivery } from '../../../src/webhooks/delivery.js';
import { CallDeliveries } from '../../../src/webhooks/call-deliveries.js';

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

describe('CallDeliveries', () => {
  it('signals a call at most its bound of times, however many distinct deliveries arrive', () => {
    const calls = new CallDeliveries(100, 2);
    const verdicts = Array.from({ length: 10 }, (_, i) => calls.admit('w1', `r${i}`));
    // Two slots, each first checked against the call's request_id (unknown yet).
    expect(verdicts.slice(0, 2)).toEqual(['check', 'check']);
    expect(verdicts.slice(2)).toEqual(Array(8).fill('over_bound'));
    // Other calls have slots of their own.
    expect(calls.admit('w2', 'r0')).toBe('check');
  });

  it("drops deliveries naming another job once the call's request_id is known", () => {
    const calls = new CallDeliveries();
    expect(calls.admit('w', 'forged')).toBe('check');
    expect(calls.afterCheck('w', 'forged', 'own')).toBe('foreign');
    // Known now: no more look-ups, and the slot the forged one held is free again.
    for (let i = 0; i < 5; i++) expect(calls.admit('w', `forged-${i}`)).toBe('foreign');
    expect(calls.admit('w', 'own')).toBe('signal');
    calls.signalled('w', 'own');
    expect(calls.admit('w', 'own')).toBe('duplicate');
    // A failure envelope names no job: it takes the second slot.
    expect(calls.admit('w', undefined)).toBe('signal');
    expect(calls.admit('w', undefined)).toBe('over_bound');
  });

  it('frees a slot when the signal was not sent, and forgets the oldest call beyond its capacity', () => {
    const calls = new CallDeliveries(2, 1);
    expect(calls.admit('w1', 'r')).toBe('check');
    expect(calls.admit('w1', 'r')).toBe('over_bound');
    calls.release('w1');
    expect(calls.admit('w1', 'r')).toBe('check');
    calls.admit('w2', 'r');
    calls.admit('w3', 'r');
    expect(calls.size).toBe(2);
    // w1 was forgotten: it starts again with a free slot.
    expect(calls.admit('w1', 'r')).toBe('check');
  });
});
