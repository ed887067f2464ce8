import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { admin, client, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

describe('key management (/v1/api-keys)', () => {
  it('rule: /v1/api-keys and /admin are guarded by the admin token', async () => {
    for (const [method, path] of [
      ['GET', '/v1/api-keys'],
      ['POST', '/v1/api-keys'],
      ['GET', '/admin/stats'],
      ['PUT', '/admin/faults'],
    ]) {
      const none = await fetch(em.url + path, { method });
      expect(none.status, path).toBe(401);
      expect(((await none.json()) as any).error.code).toBe('missing_admin_token');
      const wrong = await fetch(em.url + path, {
        method,
        headers: { 'x-admin-token': 'not-the-token' },
      });
      expect(((await wrong.json()) as any).error.code).toBe('invalid_admin_token');
    }
    // The data API's credentials do not open the admin API.
    const r = await fetch(`${em.url}/v1/api-keys`, {
      headers: { 'x-api-key': em.devKey.key, 'x-api-secret': em.devKey.secret },
    });
    expect(r.status).toBe(401);
  });

  it('rule: keys are created (secret shown once), listed, updated (products, credits, allow-list, expiry, disabled, limits) and deleted', async () => {
    const a = admin(em);
    const created = await a('POST', '/v1/api-keys', {
      name: 'ci',
      products: ['search'],
      credits: 10,
    });
    expect(created.status).toBe(201);
    const k = created.body.data;
    expect(typeof k.secret).toBe('string');
    expect(k).toMatchObject({ name: 'ci', products: ['search'], credits: 10, disabled: false });
    const listed = await a('GET', '/v1/api-keys');
    const mine = listed.body.data.keys.find((x: any) => x.id === k.id);
    expect(mine).toBeDefined();
    // The secret (and any hash of it) is never shown again.
    expect(JSON.stringify(listed.body)).not.toContain(k.secret);
    expect(Object.keys(mine)).not.toContain('secret');
    expect(JSON.stringify((await a('GET', `/v1/api-keys/${k.id}`)).body)).not.toContain(k.secret);

    const upd = await a('PATCH', `/v1/api-keys/${k.id}`, {
      products: ['search', 'enrichment'],
      add_credits: 5,
      ip_allowlist: ['127.0.0.1'],
      expires_at: '2030-01-01T00:00:00Z',
      disabled: false,
      rate_limits: { per_minute: 7, per_hour: 70 },
    });
    expect(upd.status).toBe(200);
    expect(upd.body.data).toMatchObject({
      products: ['search', 'enrichment'],
      credits: 15,
      ip_lock: true,
      ip_allowlist: ['127.0.0.1'],
      expires_at: '2030-01-01T00:00:00',
      rate_limits: { per_minute: 7, per_hour: 70 },
    });
    expect((await client(em, k).get('/usage')).status).toBe(200);
    const bad = await a('PATCH', `/v1/api-keys/${k.id}`, { credits: -1 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('credits');

    expect((await a('DELETE', `/v1/api-keys/${k.id}`)).status).toBe(200);
    expect((await a('GET', `/v1/api-keys/${k.id}`)).status).toBe(404);
    const gone = await client(em, k).get('/usage');
    expect(gone.status).toBe(401);
    expect(gone.body.error.code).toBe('invalid_api_key');
  });
});
