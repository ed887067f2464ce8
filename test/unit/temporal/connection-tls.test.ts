// The connection factory against a loopback gRPC frontend on mutual TLS (certificates made with
// openssl): the API key reaches the request metadata and nothing printed, and each way of being
// refused names the setting to fix, for the client connection and the worker's native one alike.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createSecureServer, type Http2SecureServer, type ServerHttp2Session } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeTestCertificates, type TestCertificates } from '../../../scripts/tls-certs.js';
import {
  connectTemporalClient,
  connectTemporalNative,
  TemporalConnectionError,
  type TemporalConnectionOptions,
} from '../../../src/temporal/connection.js';

const GOOD_KEY = 'pcds-test-api-key-0f9e8d7c6b5a';
const REFUSED_KEY = 'pcds-refused-api-key-1a2b3c4d';

let certs: TestCertificates;
let server: Http2SecureServer;
let address: string;
/** The Authorization header of every request the frontend received. */
const seen: (string | undefined)[] = [];
const sessions = new Set<ServerHttp2Session>();

beforeAll(async () => {
  certs = makeTestCertificates(mkdtempSync(join(tmpdir(), 'pcds-tls-unit-')));
  server = createSecureServer({
    key: readFileSync(certs.serverKey),
    cert: readFileSync(certs.serverCert),
    ca: readFileSync(certs.ca),
    requestCert: true,
    rejectUnauthorized: true,
  });
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  // A frontend that answers every call with an empty message, or UNAUTHENTICATED to a wrong key.
  server.on('stream', (stream, headers) => {
    const auth = headers.authorization;
    seen.push(typeof auth === 'string' ? auth : undefined);
    stream.on('data', () => undefined);
    if (auth !== undefined && auth !== `Bearer ${GOOD_KEY}`) {
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': '16',
          'grpc-message': 'Request unauthorized.',
        },
        { endStream: true },
      );
      return;
    }
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc' },
      { waitForTrailers: true },
    );
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.from([0, 0, 0, 0, 0]));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  address = `127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  // Connections the SDK keeps open would hold the server's close.
  for (const session of sessions) session.destroy();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  if (certs) rmSync(certs.dir, { recursive: true, force: true });
});
afterEach(() => vi.restoreAllMocks());

const mutual = (extra: Partial<TemporalConnectionOptions> = {}): TemporalConnectionOptions => ({
  address,
  tls: { cert: certs.clientCert, key: certs.clientKey, ca: certs.ca },
  connectTimeoutMs: 2_000,
  ...extra,
});

const kinds = {
  client: async (o: TemporalConnectionOptions) => (await connectTemporalClient(o)).close(),
  native: async (o: TemporalConnectionOptions) => (await connectTemporalNative(o)).close(),
};

async function refusal(connect: () => Promise<unknown>): Promise<TemporalConnectionError> {
  const err = await connect().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TemporalConnectionError);
  return err as TemporalConnectionError;
}

/** Everything written to stdout and stderr while `fn` runs. */
async function printed(fn: () => Promise<unknown>): Promise<string> {
  let out = '';
  const keep = (chunk: unknown) => ((out += String(chunk)), true);
  vi.spyOn(process.stderr, 'write').mockImplementation(keep);
  vi.spyOn(process.stdout, 'write').mockImplementation(keep);
  for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const)
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => keep(args.join(' ')));
  try {
    await fn().catch((err: unknown) => keep(err instanceof Error ? err.message : String(err)));
  } finally {
    vi.restoreAllMocks();
  }
  return out;
}

describe.each(Object.entries(kinds))('a %s connection', (_kind, connect) => {
  it('connects with the client certificate, and sends the API key as a bearer token', async () => {
    seen.length = 0;
    const out = await printed(() => connect(mutual({ apiKey: GOOD_KEY })));
    expect(out).not.toContain('Temporal at');
    expect(seen).toContain(`Bearer ${GOOD_KEY}`);
    expect(out).not.toContain(GOOD_KEY);
  });

  it('names PCDS_TEMPORAL_API_KEY when the key is refused, without the key', async () => {
    let err: TemporalConnectionError | undefined;
    const out = await printed(async () => {
      err = await refusal(() => connect(mutual({ apiKey: REFUSED_KEY })));
    });
    expect(err?.problem).toBe('api_key');
    expect(err?.message).toMatch(/refused the API key .*PCDS_TEMPORAL_API_KEY/);
    expect(err?.message).not.toContain(REFUSED_KEY);
    expect(JSON.stringify(err)).not.toContain(REFUSED_KEY);
    expect(out).not.toContain(REFUSED_KEY);
  });

  it('names PCDS_TEMPORAL_TLS_CERT/_KEY without a client certificate', async () => {
    const err = await refusal(() => connect(mutual({ tls: { ca: certs.ca } })));
    expect(err.problem).toBe('client_certificate');
    expect(err.message).toMatch(
      /requires a client certificate.*PCDS_TEMPORAL_TLS_CERT and PCDS_TEMPORAL_TLS_KEY/,
    );
  });

  it('names PCDS_TEMPORAL_TLS_CERT/_KEY for a client certificate of another CA', async () => {
    const err = await refusal(() =>
      connect(
        mutual({ tls: { cert: certs.otherClientCert, key: certs.otherClientKey, ca: certs.ca } }),
      ),
    );
    expect(err.problem).toBe('client_certificate');
    expect(err.message).toMatch(/refused this client's certificate.*PCDS_TEMPORAL_TLS_CERT/);
  });

  it('names PCDS_TEMPORAL_TLS_CA for a server certificate it cannot trust', async () => {
    const err = await refusal(() =>
      connect(mutual({ tls: { cert: certs.clientCert, key: certs.clientKey, ca: certs.otherCa } })),
    );
    expect(err.problem).toBe('unknown_ca');
    expect(err.message).toMatch(/not signed by a CA this client trusts.*PCDS_TEMPORAL_TLS_CA/);
  });

  it('names PCDS_TEMPORAL_TLS_SERVER_NAME for a certificate of another name', async () => {
    const err = await refusal(() =>
      connect(
        mutual({
          tls: {
            cert: certs.clientCert,
            key: certs.clientKey,
            ca: certs.ca,
            serverName: 'elsewhere.example',
          },
        }),
      ),
    );
    expect(err.problem).toBe('server_name');
    expect(err.message).toMatch(/another name.*PCDS_TEMPORAL_TLS_SERVER_NAME/);
  });

  it('says the server speaks TLS to a plain client', async () => {
    const err = await refusal(() => connect({ address, connectTimeoutMs: 2_000 }));
    expect(err.problem).toBe('tls_required');
    expect(err.message).toMatch(/speaks TLS.*PCDS_TEMPORAL_TLS_CA/);
  });

  it('names PCDS_TEMPORAL_ADDRESS when nothing listens', async () => {
    const err = await refusal(() => connect(mutual({ address: '127.0.0.1:1' })));
    expect(err.problem).toBe('unreachable');
    expect(err.message).toMatch(
      /cannot reach Temporal at 127\.0\.0\.1:1 \(ECONNREFUSED\).*PCDS_TEMPORAL_ADDRESS/,
    );
  });
});
