// The codec server speaks Temporal's remote codec protocol to Temporal's own tools: the temporal
// CLI, given the endpoint and the token, shows a workflow's encrypted input in clear, and without
// them shows ciphertext. Around that, the protocol's rules over real HTTP: POST /encode and
// /decode round-trip, the token is required (header or path) before any body is read, only the
// configured namespace is served, and only the Web UI's origin may call from a browser.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Connection, Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCodecServer, type CodecServer } from '../../src/codec-server.js';
import { findOrInstallTemporalCli } from '../../src/temporal/cli-binary.js';
import {
  dataConverterFromSettings,
  payloadCodecFromSettings,
} from '../../src/temporal/data-converter.js';
import { encryptionSettingsFromEnv } from '../../src/codec/settings.js';
import { temporalAddress, testNamespace, uniqueTaskQueue } from '../harness/temporal.js';

const run = promisify(execFile);
const UI_ORIGIN = 'http://127.0.0.1:8233';
const token = randomBytes(24).toString('base64url');
const settings = encryptionSettingsFromEnv({
  PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  PCDS_ENCRYPTION_KEY_ID: 'codec-test',
});
let server: CodecServer;

beforeAll(async () => {
  server = await startCodecServer({
    codec: payloadCodecFromSettings(settings)!,
    token,
    namespace: testNamespace(),
    allowedOrigin: UI_ORIGIN,
    port: 0,
  });
});

afterAll(async () => {
  await server?.stop();
});

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const plainPayload = {
  metadata: { encoding: b64('json/plain') },
  data: b64(JSON.stringify({ email: 'ada.lovelace@example.com' })),
};

function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const authorised = () => ({ authorization: `Bearer ${token}`, 'x-namespace': testNamespace() });

describe('the remote codec protocol', () => {
  it('encodes to ciphertext and decodes back, with the token in the header or the path', async () => {
    const encoded = await post('/encode', { payloads: [plainPayload] }, authorised());
    expect(encoded.status).toBe(200);
    const { payloads } = (await encoded.json()) as { payloads: (typeof plainPayload)[] };
    expect(payloads).toHaveLength(1);
    expect(Buffer.from(payloads[0].metadata.encoding, 'base64').toString()).toBe(
      'binary/encrypted',
    );
    expect(Buffer.from(payloads[0].data, 'base64').toString('latin1')).not.toContain(
      'ada.lovelace',
    );

    const decoded = await post(
      `/${token}/decode`,
      { payloads },
      { 'x-namespace': testNamespace() },
    );
    expect(decoded.status).toBe(200);
    expect(await decoded.json()).toEqual({ payloads: [plainPayload] });
  });

  it('refuses callers without the token, before reading the body', async () => {
    expect(
      (await post('/decode', { payloads: [] }, { 'x-namespace': testNamespace() })).status,
    ).toBe(401);
    expect(
      (
        await post(
          '/decode',
          { payloads: [] },
          { authorization: 'Bearer not-the-token-at-all', 'x-namespace': testNamespace() },
        )
      ).status,
    ).toBe(401);
    expect((await post(`/not-the-token-at-all/decode`, { payloads: [] })).status).toBe(401);
    // A body far above the limit: refused as unauthorised (the body was never read), not as too large.
    const huge = `{"payloads":["${'x'.repeat(20 * 1024 * 1024)}"]}`;
    expect((await post('/decode', huge, { 'x-namespace': testNamespace() })).status).toBe(401);
  });

  it('serves only its namespace, and says so without decoding', async () => {
    const other = await post(
      '/decode',
      { payloads: [plainPayload] },
      { ...authorised(), 'x-namespace': 'someone-else' },
    );
    expect(other.status).toBe(403);
    const { 'x-namespace': _, ...noNamespace } = authorised();
    expect((await post('/decode', { payloads: [] }, noNamespace)).status).toBe(400);
  });

  it('answers a tampered payload with a 400 that names no value', async () => {
    const encoded = await post('/encode', { payloads: [plainPayload] }, authorised());
    const { payloads } = (await encoded.json()) as { payloads: (typeof plainPayload)[] };
    const bytes = Buffer.from(payloads[0].data, 'base64');
    bytes[bytes.length - 1] ^= 1;
    const tampered = await post(
      '/decode',
      { payloads: [{ ...payloads[0], data: bytes.toString('base64') }] },
      authorised(),
    );
    expect(tampered.status).toBe(400);
    expect(await tampered.text()).not.toContain('ada');
  });

  it('lets a browser call from the Web UI origin only (CORS), and refuses other origins', async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/decode`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-namespace,authorization',
        },
      });
    const fromUi = await preflight(UI_ORIGIN);
    expect(fromUi.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(fromUi.headers.get('access-control-allow-headers')?.toLowerCase()).toContain(
      'x-namespace',
    );
    const fromElsewhere = await preflight('http://evil.example');
    expect(fromElsewhere.headers.get('access-control-allow-origin')).toBeNull();

    const uiCall = await post('/decode', { payloads: [] }, { ...authorised(), origin: UI_ORIGIN });
    expect(uiCall.status).toBe(200);
    expect(uiCall.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    // A page elsewhere that holds the token still gets nothing.
    const elsewhere = await post(
      '/decode',
      { payloads: [plainPayload] },
      { ...authorised(), origin: 'http://evil.example' },
    );
    expect(elsewhere.status).toBe(403);
  });
});

describe("Temporal's own CLI through the codec server", () => {
  it('shows an encrypted input in clear with the endpoint and token, ciphertext without', async () => {
    const connection = await Connection.connect({ address: temporalAddress() });
    const client = new Client({
      connection,
      namespace: testNamespace(),
      dataConverter: dataConverterFromSettings(settings),
    });
    const workflowId = `codec-cli-${randomBytes(4).toString('hex')}`;
    // No worker: the started event alone holds the input.
    const handle = await client.workflow.start('noSuchWorkflow', {
      taskQueue: uniqueTaskQueue('codec-cli'),
      workflowId,
      args: [{ email: 'grace.hopper@example.com' }],
    });
    try {
      const cli = await findOrInstallTemporalCli();
      const show = (extra: string[]) =>
        run(cli, [
          'workflow',
          'show',
          '--address',
          temporalAddress(),
          '--namespace',
          testNamespace(),
          '--workflow-id',
          workflowId,
          '--output',
          'json',
          ...extra,
        ]).then((r) => r.stdout);
      const decoded = await show([
        '--codec-endpoint',
        server.url,
        '--codec-auth',
        `Bearer ${token}`,
      ]);
      // JSON output keeps payload data in base64: decoded, it is the plain JSON input.
      expect(decoded).toContain(b64('json/plain'));
      expect(decoded).toContain(b64(JSON.stringify({ email: 'grace.hopper@example.com' })));
      const raw = await show([]);
      expect(raw).not.toContain(b64(JSON.stringify({ email: 'grace.hopper@example.com' })));
      expect(raw).toContain(b64('binary/encrypted'));
      // The wrong token: the CLI gets a refusal, not the data.
      await expect(
        show(['--codec-endpoint', server.url, '--codec-auth', 'Bearer wrong-token-wrong-token']),
      ).rejects.toThrow();
    } finally {
      await handle.terminate().catch(() => undefined);
      await connection.close();
    }
  });
});
