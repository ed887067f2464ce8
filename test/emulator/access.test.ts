import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { admin, client, newKey, start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  // trustProxy: the allow-list tests present addresses through X-Forwarded-For.
  em = await start({ trustProxy: true });
});
afterAll(() => em.stop());

const code = (r: { status: number; body: any }) => [r.status, r.body?.error?.code ?? 'ok'];

describe('authentication and access', () => {
  it('rule: credentials come in X-API-Key/X-API-Secret headers, with api_key/api_secret parameters (query or form) as fallback', async () => {
    const { key, secret } = em.devKey;
    const h = await fetch(`${em.url}/usage`, {
      headers: { 'x-api-key': key, 'x-api-secret': secret },
    });
    expect(h.status).toBe(200);
    const q = await fetch(
      `${em.url}/usage?api_key=${encodeURIComponent(key)}&api_secret=${encodeURIComponent(secret)}`,
    );
    expect(q.status).toBe(200);
    const form = await fetch(`${em.url}/person/enrichment`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        api_key: key,
        api_secret: secret,
        email: 'someone@unknown.pcds.dev',
      }).toString(),
    });
    expect(form.status).toBe(202);
    // Headers are preferred: a wrong header pair is not rescued by right parameters.
    const both = await fetch(`${em.url}/usage?api_key=${key}&api_secret=${secret}`, {
      headers: { 'x-api-key': key, 'x-api-secret': 'wrong-secret' },
    });
    expect(both.status).toBe(401);
  });

  it('rule: missing_credentials, invalid_credentials (wrong or disabled), api_key_expired', async () => {
    const k = await newKey(em);
    const post = (h: Record<string, string>) =>
      fetch(`${em.url}/person/enrichment`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...h },
        body: '{"email":"a@b.co"}',
      }).then(async (r) => [r.status, ((await r.json()) as any).error?.code]);
    expect(await post({})).toEqual([401, 'missing_credentials']);
    expect(await post({ 'x-api-key': k.key })).toEqual([401, 'missing_credentials']);
    expect(await post({ 'x-api-key': k.key, 'x-api-secret': 'wrong-secret' })).toEqual([
      401,
      'invalid_credentials',
    ]);
    expect(await post({ 'x-api-key': 'pcds_not_a_key', 'x-api-secret': k.secret })).toEqual([
      401,
      'invalid_credentials',
    ]);
    await admin(em)('PATCH', `/v1/api-keys/${k.id}`, { disabled: true });
    expect(await post({ 'x-api-key': k.key, 'x-api-secret': k.secret })).toEqual([
      401,
      'invalid_credentials',
    ]);
    await admin(em)('PATCH', `/v1/api-keys/${k.id}`, {
      disabled: false,
      expires_at: new Date(Date.now() - 1000).toISOString(),
    });
    expect(await post({ 'x-api-key': k.key, 'x-api-secret': k.secret })).toEqual([
      401,
      'api_key_expired',
    ]);
  });

  it('rule: subscription_inactive, and subscription_required per product (enrichment, search, newsfeed)', async () => {
    const a = admin(em);
    const onlySearch = await newKey(em, { products: ['search'] });
    const c = client(em, onlySearch);
    expect(code(await c.post('/person/enrichment', { email: 'a@b.co' }))).toEqual([
      403,
      'subscription_required',
    ]);
    expect(
      code(await c.post('/person/newsfeed', { social_media_url: 'https://www.linkedin.com/in/x' })),
    ).toEqual([403, 'subscription_required']);
    expect(code(await c.post('/person/search', { query: 'engineer' }))).toEqual([202, 'ok']);
    const onlyNews = await newKey(em, { products: ['newsfeed'] });
    const n = client(em, onlyNews);
    expect(code(await n.post('/person/search', { query: 'engineer' }))).toEqual([
      403,
      'subscription_required',
    ]);
    expect(
      code(await n.post('/person/newsfeed', { social_media_url: 'https://www.linkedin.com/in/x' })),
    ).toEqual([202, 'ok']);
    await a('PATCH', `/v1/api-keys/${onlyNews.id}`, { subscription_active: false });
    expect(
      code(await n.post('/person/newsfeed', { social_media_url: 'https://www.linkedin.com/in/x' })),
    ).toEqual([403, 'subscription_inactive']);
    // Restricted endpoints need a grant.
    expect(code(await client(em).post('/person/osint', { email: 'a@b.co' }))).toEqual([
      403,
      'access_denied',
    ]);
  });

  it('rule: the per-key IP allow-list takes exact addresses, IPv4/IPv6 CIDR and a.b.c.* wildcards; a lock with an empty list blocks all (ip_not_allowed)', async () => {
    const a = admin(em);
    const k = await newKey(em);
    const c = client(em, k);
    const from = (ip: string) => c.get('/usage', { 'x-forwarded-for': ip }).then(code);
    await a('PATCH', `/v1/api-keys/${k.id}`, {
      ip_allowlist: ['203.0.113.7', '198.51.100.0/24', '2001:db8::/32', '192.0.2.*'],
    });
    expect(await from('203.0.113.7')).toEqual([200, 'ok']);
    expect(await from('203.0.113.8')).toEqual([403, 'ip_not_allowed']);
    expect(await from('198.51.100.254')).toEqual([200, 'ok']);
    expect(await from('198.51.101.1')).toEqual([403, 'ip_not_allowed']);
    expect(await from('2001:db8:1::5')).toEqual([200, 'ok']);
    expect(await from('2001:db9::5')).toEqual([403, 'ip_not_allowed']);
    expect(await from('192.0.2.200')).toEqual([200, 'ok']);
    expect(await from('192.0.3.1')).toEqual([403, 'ip_not_allowed']);
    expect(await from('::ffff:203.0.113.7')).toEqual([200, 'ok']);
    const bad = await a('PATCH', `/v1/api-keys/${k.id}`, { ip_allowlist: ['10.0.0.0/99'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('ip_allowlist.0');
    await a('PATCH', `/v1/api-keys/${k.id}`, { ip_lock: true, ip_allowlist: [] });
    expect(await from('203.0.113.7')).toEqual([403, 'ip_not_allowed']);
    expect(await from('127.0.0.1')).toEqual([403, 'ip_not_allowed']);
    await a('PATCH', `/v1/api-keys/${k.id}`, { ip_lock: false });
    expect(await from('8.8.8.8')).toEqual([200, 'ok']);
  });

  it("rule: another key's request_id answers 404 request_not_found", async () => {
    const mine = client(em);
    const other = client(em, await newKey(em));
    const ack = await mine.post('/person/enrichment', { email: 'someone@unknown.pcds.dev' });
    const rid = ack.body.data.request_id;
    expect(code(await other.get(`/person/enrichment?request_id=${rid}`))).toEqual([
      404,
      'request_not_found',
    ]);
    expect(code(await other.post('/person/search', { request_id: rid }))).toEqual([
      404,
      'request_not_found',
    ]);
    // The same id on another endpoint's path is not that endpoint's request either.
    expect(code(await mine.get(`/person/enrich?request_id=${rid}`))).toEqual([
      404,
      'request_not_found',
    ]);
    expect((await mine.get(`/person/enrichment?request_id=${rid}`)).status).not.toBe(404);
  });

  it('rule: the admin token is random at each start (the seed does not give it away), unless one is given', async () => {
    const [a, b] = [await start({ seed: 42 }), await start({ seed: 42 })];
    const given = await start({ seed: 42, adminToken: 'operator-chosen-token' });
    try {
      expect(a.devKey).toEqual(b.devKey);
      expect(a.adminToken).not.toBe(b.adminToken);
      expect(a.adminToken).toMatch(/^pcds_admin_[0-9a-f]{32}$/);
      // One start's token opens nothing on another.
      const other = await fetch(`${b.url}/admin/stats`, {
        headers: { 'x-admin-token': a.adminToken },
      });
      expect(other.status).toBe(401);
      expect((await admin(b)('GET', '/admin/stats')).status).toBe(200);
      expect(given.adminToken).toBe('operator-chosen-token');
      expect((await admin(given)('GET', '/admin/stats')).status).toBe(200);
    } finally {
      await Promise.all([a.stop(), b.stop(), given.stop()]);
    }
  });
});
