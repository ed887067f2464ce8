// Error mapping of the HTTP client against a tiny local server: replies become Reply values with
// Retry-After in ms, synchronous failures become ServiceError, lost connections TransportError
// with the phase that decides whether a submit may be repeated.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEndpoint } from '../../../src/contract/index.js';
import { ServiceError, TransportError } from '../../../src/http/errors.js';
import { ServiceHttp } from '../../../src/http/service-client.js';

let server: Server;
let http: ServiceHttp;
const seenHeaders: Record<string, string | string[] | undefined>[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seenHeaders.push(req.headers);
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/usage' && url.searchParams.get('month') === '13') {
      res.writeHead(400, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({ success: false, error: { code: 'invalid_month', message: 'bad' } }),
      );
    }
    if (url.pathname === '/usage') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ success: true, data: { month: 1, year: 2026 } }));
    }
    if (url.pathname === '/person/enrichment' && req.method === 'POST') {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      return res.end(
        JSON.stringify({
          success: false,
          error: { code: 'rate_limit_exceeded', message: 'slow down' },
        }),
      );
    }
    if (url.pathname === '/person/search') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({ success: true, data: { q: Object.fromEntries(url.searchParams) } }),
      );
    }
    // Anything else: hang up without a reply.
    req.socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  http = new ServiceHttp({ baseUrl: `http://127.0.0.1:${port}`, connections: 2, timeoutMs: 2000 });
});
afterAll(async () => {
  await http.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const client = () => http.clientFor({ key: 'k-123', secret: 's-456' });

describe('ServiceHttp', () => {
  it('sends the key and secret headers', async () => {
    await client().usage();
    const h = seenHeaders.at(-1)!;
    expect(h['x-api-key']).toBe('k-123');
    expect(h['x-api-secret']).toBe('s-456');
  });

  it('returns a 429 reply with Retry-After in milliseconds', async () => {
    const reply = await client().submit(getEndpoint('person_enrichment'), { email: 'a@b.co' });
    expect(reply.httpStatus).toBe(429);
    expect(reply.retryAfterMs).toBe(7000);
    expect(reply.body).toMatchObject({ error: { code: 'rate_limit_exceeded' } });
  });

  it('reads a search page with request_id, offset and limit by GET', async () => {
    const reply = await client().readSearchPage('abc_1_1', 20, 10);
    expect(reply.body).toMatchObject({
      data: { q: { request_id: 'abc_1_1', offset: '20', limit: '10' } },
    });
  });

  it('turns a failed synchronous call into a ServiceError with code and status', async () => {
    const err = await client()
      .usage({ month: 13 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ code: 'invalid_month', httpStatus: 400 });
  });

  it('marks a connection closed after sending as after_send (a submit must not be repeated)', async () => {
    const err = await client()
      .poll(getEndpoint('company_enrichment'), 'x_1_1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).phase).toBe('after_send');
  });

  it('marks a refused connection as connect (safe to repeat)', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise((r) => probe.close(r));
    const dead = new ServiceHttp({
      baseUrl: `http://127.0.0.1:${port}`,
      connections: 1,
      timeoutMs: 1000,
    });
    const err = await dead
      .clientFor({ key: 'key-zz9', secret: 'secret-zz9' })
      .usage()
      .catch((e: unknown) => e);
    await dead.close();
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).phase).toBe('connect');
    expect(String((err as Error).message)).not.toMatch(/zz9/);
  });
});
