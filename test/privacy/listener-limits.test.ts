// Every HTTP listener the project opens bounds its connections: a client that trickles its
// headers (or its body) a byte a second is cut off once the configured deadline passes, and a
// connection beyond the configured limit is closed as it arrives while the others stay open.
// Each listener is the real one, started as its command starts it, probed over raw TCP: `pcds
// mcp` over HTTP, the webhook receiver, the codec server, the metrics endpoint and the emulator
// (the dev stack runs the last four).
import { randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AesGcmPayloadCodec } from '../../src/codec/aes-gcm-codec.js';
import { startCodecServer, type CodecServer } from '../../src/codec-server.js';
import { configuredListenerLimits, loadConfig } from '../../src/config.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { DEFAULT_LISTENER_LIMITS, listenerLimits } from '../../src/http/listener-limits.js';
import { startMetricsEndpoint, type MetricsEndpoint } from '../../src/metrics/endpoint.js';
import { startPcdsMcpHttp, type PcdsMcpHttp } from '../../src/mcp-server/http.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../src/webhooks/receiver.js';
import { connectClient } from '../harness/temporal.js';
import { oneMoreIsRefused, openConnections, requestHead, trickle } from '../harness/slow-client.js';

// Short deadlines, so a probe takes seconds; the defaults are checked apart (below).
const HEADERS_MS = 2_000;
const REQUEST_MS = 4_000;
const MAX_CONNECTIONS = 5;
const LIMITS = { headersMs: HEADERS_MS, requestMs: REQUEST_MS, maxConnections: MAX_CONNECTIONS };
// Node looks for late requests every second; a loaded machine adds its own delay.
const SLACK_MS = 3_000;

const MCP_TOKEN = randomBytes(24).toString('base64url');
const CODEC_TOKEN = randomBytes(24).toString('base64url');

interface Listener {
  name: string;
  url: string;
  /** A POST whose body the listener reads, once its headers passed its checks. */
  slowBody?: { head: string };
}

let mcp: PcdsMcpHttp;
let codec: CodecServer;
let receiver: WebhookReceiver;
let emulator: RunningEmulator;
let metrics: MetricsEndpoint;
let upstream: Server;
let connection: Connection;
const listeners: Listener[] = [];

beforeAll(async () => {
  mcp = await startPcdsMcpHttp(() => new McpServer({ name: 'limits', version: '0' }), {
    tokens: [{ id: 'default', token: MCP_TOKEN }],
    port: 0,
    limits: LIMITS,
  });
  codec = await startCodecServer({
    codec: new AesGcmPayloadCodec({
      currentKeyId: 'k1',
      keys: new Map([['k1', new Uint8Array(randomBytes(32))]]),
    }),
    token: CODEC_TOKEN,
    namespace: 'default',
    allowedOrigin: 'http://127.0.0.1:8233',
    port: 0,
    limits: LIMITS,
  });
  const temporal = await connectClient();
  connection = temporal.connection;
  receiver = await startWebhookReceiver({
    settings: {
      publicUrl: 'https://hooks.example.net/pcds',
      current: { id: 'k1', secret: randomBytes(16).toString('hex') },
      previous: [],
      allowLoopback: false,
      fallbackPollMs: 60_000,
    },
    client: temporal.client,
    port: 0,
    host: '127.0.0.1',
    log: { info: () => undefined, warn: () => undefined },
    timeouts: { headersMs: HEADERS_MS, requestMs: REQUEST_MS },
    maxConnections: MAX_CONNECTIONS,
  });
  emulator = await startEmulator({
    port: 0,
    listener: {
      headersTimeoutMs: HEADERS_MS,
      requestTimeoutMs: REQUEST_MS,
      maxConnections: MAX_CONNECTIONS,
    },
  });
  // What the SDK's core renders, on its own loopback port.
  upstream = createServer((_req, res) => res.end('pcds_rows_total 1\n'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  metrics = await startMetricsEndpoint({
    host: '127.0.0.1',
    port: 0,
    upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/metrics`,
    limits: LIMITS,
  });
  const body = { 'content-type': 'application/json', 'content-length': '64' };
  listeners.push(
    {
      name: 'pcds mcp (HTTP)',
      url: mcp.url,
      slowBody: {
        head: requestHead('POST', mcp.url, {
          ...body,
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${MCP_TOKEN}`,
        }),
      },
    },
    {
      name: 'codec server',
      url: `${codec.url}/decode`,
      slowBody: {
        head: requestHead('POST', `${codec.url}/decode`, {
          ...body,
          authorization: `Bearer ${CODEC_TOKEN}`,
          'x-namespace': 'default',
        }),
      },
    },
    { name: 'webhook receiver', url: `${receiver.url}/hooks/x` },
    { name: 'metrics endpoint', url: metrics.url },
    { name: 'emulator', url: `${emulator.url}/person/enrichment` },
  );
});

afterAll(async () => {
  await mcp?.close();
  await codec?.stop();
  await receiver?.stop();
  await emulator?.stop();
  await metrics?.close();
  await new Promise((resolve) => upstream?.close(resolve));
  await connection?.close();
});

/** One request on a connection of its own, closed after it (no pool keeps it open). */
function statusOf(url: string, method = 'GET'): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    request(url, { method, agent: false, headers: { connection: 'close' } }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode));
    })
      .once('error', reject)
      .end();
  });
}

describe('every listener bounds its connections', () => {
  it('answers an ordinary request (the probes below are of listeners that work)', async () => {
    expect(await statusOf(metrics.url)).toBe(200);
    expect(await statusOf(`${emulator.url}/openapi.json`)).toBe(200);
    expect(await statusOf(mcp.url, 'POST')).toBe(401);
  });

  it('cuts off a client that trickles its headers a byte a second, once the header deadline passes', async () => {
    const probes = await Promise.all(
      listeners.map(async (l) => ({
        name: l.name,
        got: await trickle(l.url, {
          tail: requestHead('GET', l.url, { 'x-padding': 'a'.repeat(64) }),
          giveUpMs: HEADERS_MS + SLACK_MS + 5_000,
        }),
      })),
    );
    for (const { name, got } of probes) {
      expect(got.closedAfterMs, name).toBeGreaterThanOrEqual(HEADERS_MS - 250);
      expect(got.closedAfterMs, name).toBeLessThanOrEqual(HEADERS_MS + SLACK_MS);
      // It never got to finish its headers.
      expect(got.answer, name).not.toMatch(/^HTTP\/1\.1 [2345]\d\d (?!Request Timeout)/);
    }
  });

  it('cuts off a client that trickles its body, once the request deadline passes', async () => {
    const probes = await Promise.all(
      listeners
        .filter((l) => l.slowBody)
        .map(async (l) => ({
          name: l.name,
          got: await trickle(l.url, {
            head: l.slowBody!.head,
            tail: `{"payloads":[${' '.repeat(60)}]}`,
            giveUpMs: REQUEST_MS + SLACK_MS + 5_000,
          }),
        })),
    );
    expect(probes).toHaveLength(2);
    for (const { name, got } of probes) {
      expect(got.closedAfterMs, name).toBeLessThanOrEqual(REQUEST_MS + SLACK_MS);
      expect(got.sent, name).toBeLessThan(60);
    }
  });

  it('closes one connection beyond the limit as it arrives, and keeps the others', async () => {
    for (const l of listeners) {
      const held = await openConnections(l.url, MAX_CONNECTIONS);
      try {
        expect(await oneMoreIsRefused(l.url, 1_000), l.name).toBe(true);
        expect(held.closed(), l.name).toBe(0);
      } finally {
        held.closeAll();
      }
      // Once they are gone, a connection is taken again.
      await expect
        .poll(() => oneMoreIsRefused(l.url, 300), { timeout: 5_000, interval: 100 })
        .toBe(false);
    }
  });
});

describe('the bounds by default and from the configuration', () => {
  it('every listener has deadlines and a connection limit unless told otherwise', () => {
    expect(listenerLimits()).toEqual(DEFAULT_LISTENER_LIMITS);
    expect(DEFAULT_LISTENER_LIMITS).toEqual({
      headersMs: 10_000,
      requestMs: 30_000,
      maxConnections: 256,
    });
    // A header deadline past the request's would never fire: it is brought in.
    expect(listenerLimits({ headersMs: 60_000, requestMs: 5_000 }).headersMs).toBe(5_000);
  });

  it('PCDS_LISTEN_* set them for every listener of the process; unset ones keep the defaults', () => {
    expect(configuredListenerLimits(loadConfig({}))).toEqual({});
    expect(
      configuredListenerLimits(
        loadConfig({
          PCDS_LISTEN_HEADERS_TIMEOUT_MS: '5000',
          PCDS_LISTEN_REQUEST_TIMEOUT_MS: '20000',
          PCDS_LISTEN_MAX_CONNECTIONS: '64',
        }),
      ),
    ).toEqual({ headersMs: 5_000, requestMs: 20_000, maxConnections: 64 });
    expect(() => loadConfig({ PCDS_LISTEN_MAX_CONNECTIONS: '0' })).toThrow(
      /PCDS_LISTEN_MAX_CONNECTIONS/,
    );
  });
});
