// The emulator under hostile input: each request is answered in the envelope with a 4xx, never a
// 500, a crash or a stall, and nothing refused is billed.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { client, sleep, start } from './helpers.js';
import { datasetFor } from '../../src/emulator/dataset/dataset.js';
import { knownSubjects } from './mcp-helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

const deep = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

async function rawPost(
  path: string,
  body: string | undefined,
  headers: Record<string, string> = {},
) {
  const res = await fetch(em.url + path, {
    method: 'POST',
    headers: {
      'x-api-key': em.devKey.key,
      'x-api-secret': em.devKey.secret,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body } : {}),
  });
  return { status: res.status, body: (await res.json()) as any };
}

function expectEnvelope(r: { body: any }, code = 'invalid_request') {
  expect(r.body).toMatchObject({ success: false, error: { code } });
  expect(typeof r.body.timestamp).toBe('string');
}

describe('the emulator under hostile input', () => {
  it('rule: JSON nested 5,000 deep in custom_filters, exclude or a free-form body is a 400, not a 500, and submits nothing', async () => {
    const before = em.stats().jobsSubmitted;
    for (const [path, body] of [
      ['/person/search', `{"query":"engineer","custom_filters":${deep(5000)}}`],
      ['/person/search', `{"query":"engineer","exclude":${deep(5000)}}`],
      ['/person/leads', `{"anything":${deep(5000)}}`],
      ['/person/enrichment/feedback', `{"anything":${deep(5000)}}`],
    ] as const) {
      const r = await rawPost(path, body);
      expect(r.status, path).toBe(400);
      expectEnvelope(r);
      expect(r.body.error.message).toContain('deeper than 32 levels');
    }
    // At the bound it is an ordinary input.
    const ok = await rawPost('/person/leads', `{"anything":${deep(31)}}`);
    expect(ok.status).toBe(202);
    expect(em.stats().jobsSubmitted).toBe(before + 1);
  });

  it('rule: filter objects are bounded (50 keys, 1,000 values in all): more is a clear 400; a search at the bound is accepted', async () => {
    const c = client(em);
    const many = Array.from({ length: 5000 }, (_, i) => `title ${i}`);
    const tooMany = await c.post('/person/search', {
      query: 'engineer',
      custom_filters: { titles: many },
    });
    expect(tooMany.status).toBe(400);
    expectEnvelope(tooMany);
    expect(tooMany.body.error.message).toContain('custom_filters must hold at most 1000 values');
    const keys = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'x']));
    const wide = await c.post('/person/search', { query: 'engineer', exclude: keys });
    expect(wide.status).toBe(400);
    expect(wide.body.error.message).toContain('exclude must have at most 50 keys');
    const atBound = await c.post('/person/search', {
      query: 'engineer',
      custom_filters: { titles: many.slice(0, 500), companies: many.slice(500, 1000) },
    });
    expect(atBound.status).toBe(202);

    // A long list matches exactly as its one real value does alone.
    const d = datasetFor(em.options.seed, em.options.dataset);
    const title = d.people[0].organizations.find((o) => o.is_current)!.title;
    const rowsOf = async (titles: string[]) => {
      const r = await c.post('/person/search', { custom_filters: { titles }, limit: 100 });
      const id = r.body.data.request_id as string;
      await c.waitDone('/person/search', id);
      const page = await c.get(`/person/search?request_id=${id}&offset=0&limit=100`);
      return { total: page.body.data.total, results: page.body.data.results };
    };
    const alone = await rowsOf([title]);
    expect(alone.total).toBeGreaterThan(0);
    expect(await rowsOf([...many.slice(0, 999), title])).toEqual(alone);
  });

  it('rule: a cursor with an offset or limit out of range is refused and not billed', async () => {
    const c = client(em);
    const started = await c.post('/person/search', { query: 'engineer' });
    const requestId = started.body.data.request_id as string;
    await c.waitDone('/person/search', requestId);
    const usage = async () => (await c.get('/usage')).body.data.requests_count.total as number;
    const requests = await usage();
    const charged = em.stats().creditsCharged;
    for (const [o, l] of [
      [-10, 10],
      [5000, 10],
      [0, 0],
      [0, 100_000],
      [1.5, 10],
    ]) {
      const cursor = Buffer.from(JSON.stringify({ r: requestId, o, l })).toString('base64url');
      const r = await c.post('/person/search', { cursor });
      expect(r.status, `${o}/${l}`).toBe(400);
      expectEnvelope(r);
    }
    expect(await usage()).toBe(requests);
    expect(em.stats().creditsCharged).toBe(charged);
  });

  it('rule: emails longer than RFC 5321 allows (local part 64, address 254) are refused', async () => {
    const c = client(em);
    const local65 = `${'a'.repeat(65)}@example.com`;
    const long = `a@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(60)}.com`;
    expect(long.length).toBeGreaterThan(254);
    for (const email of [local65, long]) {
      const r = await c.post('/person/enrichment', { email });
      expect(r.status).toBe(400);
      expectEnvelope(r);
      expect(r.body.error.message).toContain('RFC 5321');
      expect(r.body.error.message).not.toContain(email);
    }
    const { email } = knownSubjects(em);
    expect((await c.post('/person/enrichment', { email })).status).toBe(202);
    expect(
      (await c.post('/person/enrichment', { email: `${'a'.repeat(64)}@example.com` })).status,
    ).toBe(202);
  });

  it('rule: a null, empty or non-object body on a free-form endpoint is refused', async () => {
    const before = em.stats().jobsSubmitted;
    for (const path of ['/person/leads', '/company/checkseller', '/person/enrichment/feedback']) {
      for (const body of ['null', '{}', '[]', '"text"', undefined]) {
        const r = await rawPost(path, body);
        expect(r.status, `${path} ${body}`).toBe(400);
        expectEnvelope(r);
      }
    }
    expect(em.stats().jobsSubmitted).toBe(before);
  });

  it("rule: Fastify's and the HTTP parser's own errors come in the envelope (a malformed URL escape, oversized headers: 431)", async () => {
    const bad = await fetch(`${em.url}/person/search%E0%A4%A?request_id=x`);
    expect(bad.status).toBe(400);
    expectEnvelope({ body: await bad.json() });

    const url = new URL(em.url);
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: '/usage',
          headers: { 'x-filler': 'x'.repeat(20_000) },
        },
        (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(reply.status).toBe(431);
    expectEnvelope({ body: JSON.parse(reply.body) });
  });

  it('rule: finished jobs are forgotten after the retention period (then request_not_found)', async () => {
    // 100 s of retention before the time scale: 1 s here.
    const short = await start({ jobRetentionMs: 100_000 });
    try {
      const c = client(short);
      const { email } = knownSubjects(short);
      const ack = await c.post('/person/enrichment', { email });
      const id = ack.body.data.request_id as string;
      expect((await c.waitDone('/person/enrichment', id)).status).toBe(200);
      await sleep(1100);
      const gone = await c.get(`/person/enrichment?request_id=${id}`);
      expect(gone.status).toBe(404);
      expectEnvelope(gone, 'request_not_found');
    } finally {
      await short.stop();
    }
  });
});
