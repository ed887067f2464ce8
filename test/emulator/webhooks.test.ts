import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { datasetFor } from '../../src/emulator/dataset/dataset.js';
import { client, sleep, start } from './helpers.js';

/** A receiver that fails the first `failFirst` deliveries with 500, then accepts. */
async function receiver(failFirst: number) {
  const bodies: any[] = [];
  let attempts = 0;
  const server: Server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      attempts++;
      if (attempts <= failFirst) {
        res.writeHead(500).end();
        return;
      }
      bodies.push(JSON.parse(data));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    bodies,
    attempts: () => attempts,
    close: () => new Promise((r) => server.close(r)),
  };
}

let strict: RunningEmulator;
beforeAll(async () => {
  strict = await start();
});
afterAll(() => strict.stop());

describe('webhooks', () => {
  it('rule: callback_url is checked at submit against every rule (scheme, 1,024 characters, userinfo, localhost, private/reserved IPv4 and IPv6, host suffixes): 400 invalid_callback_url', async () => {
    const c = client(strict);
    const bad = [
      'ftp://hooks.pcds.dev/x',
      `https://hooks.pcds.dev/${'a'.repeat(1010)}`,
      'https://user:pass@hooks.pcds.dev/x',
      'http://localhost:9000/x',
      'http://127.0.0.1:9000/x',
      'http://10.1.2.3/x',
      'http://192.168.1.1/x',
      'http://169.254.169.254/x',
      'http://[::1]/x',
      'http://[fc00::1]/x',
      'http://[fe80::1]/x',
      'http://[::ffff:10.0.0.1]/x',
      ...['local', 'internal', 'lan', 'home', 'corp', 'test', 'invalid', 'example'].map(
        (s) => `https://hooks.${s}/x`,
      ),
    ];
    for (const url of bad) {
      const r = await c.post('/person/enrichment', {
        email: 'someone@unknown.pcds.dev',
        callback_url: url,
      });
      expect(r.status, url.slice(0, 60)).toBe(400);
      expect(r.body.error.code, url.slice(0, 60)).toBe('invalid_callback_url');
    }
    expect(`https://hooks.pcds.dev/${'a'.repeat(1001)}`.length).toBe(1024);
    const ok = await c.post('/person/enrichment', {
      email: 'someone@unknown.pcds.dev',
      callback_url: `https://hooks.pcds.dev/${'a'.repeat(1001)}`,
    });
    expect(ok.status).toBe(202);
  });

  it('rule: on completion the poll envelope is POSTed to callback_url, repeated and retried as configured, never charged again; loopback only with the development switch', async () => {
    const rx = await receiver(1);
    const em = await start({
      allowLoopbackCallbacks: true,
      webhooks: { deliveries: 2, retries: 2, retryDelayMs: 500 },
    });
    try {
      const c = client(em);
      // The switch is off by default.
      const refused = await client(strict).post('/person/enrichment', {
        email: 'a@unknown.pcds.dev',
        callback_url: rx.url,
      });
      expect(refused.body.error.code).toBe('invalid_callback_url');

      const email = datasetFor(em.options.seed, em.options.dataset).people.find(
        (p) => p.businessEmail,
      )!.businessEmail;
      const ack = await c.post('/person/enrichment', { email, callback_url: rx.url });
      expect(ack.status).toBe(202);
      const poll = await c.waitDone('/person/enrichment', ack.body.data.request_id);
      for (let i = 0; i < 100 && rx.bodies.length < 2; i++) await sleep(10);
      await em.drainWebhooks();
      expect(rx.bodies).toHaveLength(2);
      expect(rx.attempts()).toBe(3); // one failure, retried, plus the repeat
      for (const b of rx.bodies) {
        expect(b.success).toBe(true);
        expect(b.data).toEqual(poll.body.data);
      }
      const s = em.stats();
      expect(s.webhookDeliveries).toBe(2);
      expect(s.webhookFailures).toBe(1);
      expect(s.creditsCharged).toBe(1);
    } finally {
      await em.stop();
      await rx.close();
    }
  });
});
