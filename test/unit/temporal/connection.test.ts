// The connection settings without a server: PCDS_TEMPORAL_TLS_* and PCDS_TEMPORAL_API_KEY into
// the SDK's options (files or PEM text), bad settings refused by name, and the failure mapping.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCertificates, type TestCertificates } from '../../../scripts/tls-certs.js';
import { ConfigError, loadConfig } from '../../../src/config.js';
import {
  clientConnectionOptions,
  nativeConnectionOptions,
  resolveConnectionOptions,
  statusProblem,
  temporalConnectionOptions,
  transportProblem,
} from '../../../src/temporal/connection.js';

let certs: TestCertificates;
beforeAll(() => {
  certs = makeTestCertificates(mkdtempSync(join(tmpdir(), 'pcds-tls-settings-')));
});
afterAll(() => rmSync(certs.dir, { recursive: true, force: true }));

const API_KEY = 'temporal-cloud-key-7d1c9a';

describe('PCDS_TEMPORAL_* settings', () => {
  it('stay plain without any TLS setting', () => {
    const r = resolveConnectionOptions(temporalConnectionOptions(loadConfig({})));
    expect(r.tls).toBeUndefined();
    expect(clientConnectionOptions(r)).toEqual({ address: '127.0.0.1:7233' });
  });

  it('read the certificate files into mutual TLS, with the server name', () => {
    const config = loadConfig({
      PCDS_TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      PCDS_TEMPORAL_TLS_CERT: certs.clientCert,
      PCDS_TEMPORAL_TLS_KEY: certs.clientKey,
      PCDS_TEMPORAL_TLS_CA: certs.ca,
      PCDS_TEMPORAL_TLS_SERVER_NAME: 'frontend.example',
    });
    const native = nativeConnectionOptions(
      resolveConnectionOptions(temporalConnectionOptions(config)),
    );
    expect(native.address).toBe('ns.acct.tmprl.cloud:7233');
    expect(native.tls?.clientCertPair?.crt.toString()).toBe(readFileSync(certs.clientCert, 'utf8'));
    expect(native.tls?.clientCertPair?.key.toString()).toBe(readFileSync(certs.clientKey, 'utf8'));
    expect(native.tls?.serverRootCACertificate?.toString()).toBe(readFileSync(certs.ca, 'utf8'));
    expect(native.tls?.serverNameOverride).toBe('frontend.example');
  });

  it('take PEM text too, with \\n written as two characters', () => {
    const pem = readFileSync(certs.ca, 'utf8');
    const r = resolveConnectionOptions({
      address: 'x:7233',
      tls: { ca: pem.replace(/\n/g, '\\n') },
    });
    expect(r.tls?.serverRootCACertificate?.toString()).toBe(pem);
  });

  it('turn TLS on with an API key alone, and pass the key to both connections', () => {
    const config = loadConfig({ PCDS_TEMPORAL_API_KEY: API_KEY });
    const r = resolveConnectionOptions(temporalConnectionOptions(config));
    expect(r.tls).toEqual({});
    expect(clientConnectionOptions(r).apiKey).toBe(API_KEY);
    expect(nativeConnectionOptions(r).apiKey).toBe(API_KEY);
  });

  it('refuse a certificate without its key, and a key of another certificate, by name', () => {
    expect(() => loadConfig({ PCDS_TEMPORAL_TLS_CERT: certs.clientCert })).toThrow(
      /PCDS_TEMPORAL_TLS_CERT and PCDS_TEMPORAL_TLS_KEY go together/,
    );
    expect(() =>
      resolveConnectionOptions({
        address: 'x:7233',
        tls: { cert: certs.clientCert, key: certs.otherClientKey },
      }),
    ).toThrow(/PCDS_TEMPORAL_TLS_CERT and PCDS_TEMPORAL_TLS_KEY do not belong together/);
  });

  it('name an unreadable file or one without PEM, never its path', () => {
    const missing = join(certs.dir, 'secret-name-missing.pem');
    const err = (() => {
      try {
        resolveConnectionOptions({ address: 'x:7233', tls: { ca: missing } });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.message).toMatch(/^PCDS_TEMPORAL_TLS_CA: the file cannot be read \(ENOENT\)/);
    expect(err?.message).not.toContain('secret-name-missing');
    const notPem = join(certs.dir, 'not.pem');
    writeFileSync(notPem, 'hello');
    expect(() => resolveConnectionOptions({ address: 'x:7233', tls: { ca: notPem } })).toThrow(
      /^PCDS_TEMPORAL_TLS_CA: the file holds no PEM block/,
    );
  });

  it('refuse a key file that other users can read, without quoting it', () => {
    const open = join(certs.dir, 'open.key');
    writeFileSync(open, readFileSync(certs.clientKey));
    chmodSync(open, 0o644);
    let err: Error | undefined;
    try {
      resolveConnectionOptions({ address: 'x:7233', tls: { cert: certs.clientCert, key: open } });
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message).toBe(
      "PCDS_TEMPORAL_TLS_KEY: the key file is open to other users (mode 0644): a secret file must be its owner's only: chmod 600 it (on Kubernetes, mount the secret with defaultMode 0400)",
    );
    expect(err?.message).not.toContain(open);
    // The private one is taken.
    expect(
      resolveConnectionOptions({
        address: 'x:7233',
        tls: { cert: certs.clientCert, key: certs.clientKey },
      }).tls?.clientCertPair,
    ).toBeDefined();
  });

  it('take an empty value (as docker compose passes ${X:-}) as unset', () => {
    const config = loadConfig({
      PCDS_TEMPORAL_TLS: '',
      PCDS_TEMPORAL_TLS_CERT: '',
      PCDS_TEMPORAL_TLS_KEY: '',
      PCDS_TEMPORAL_API_KEY: '',
    });
    expect(resolveConnectionOptions(temporalConnectionOptions(config)).tls).toBeUndefined();
  });

  it('refuse PCDS_TEMPORAL_TLS=false beside an API key (it goes over TLS only)', () => {
    expect(() =>
      loadConfig({ PCDS_TEMPORAL_TLS: 'false', PCDS_TEMPORAL_API_KEY: API_KEY }),
    ).toThrow(/PCDS_TEMPORAL_TLS=false/);
  });
});

describe('a failed connection names the setting to fix', () => {
  const ctx = { address: 'h:7233', namespace: 'ns', tls: true, clientCert: true, apiKey: true };

  it.each([
    ['tcp', 'ECONNREFUSED', 'unreachable', 'PCDS_TEMPORAL_ADDRESS'],
    ['tcp', 'ENOTFOUND', 'unreachable', 'PCDS_TEMPORAL_ADDRESS'],
    ['tls', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unknown_ca', 'PCDS_TEMPORAL_TLS_CA'],
    ['tls', 'SELF_SIGNED_CERT_IN_CHAIN', 'unknown_ca', 'PCDS_TEMPORAL_TLS_CA'],
    ['tls', 'ERR_TLS_CERT_ALTNAME_INVALID', 'server_name', 'PCDS_TEMPORAL_TLS_SERVER_NAME'],
    ['tls', 'ERR_SSL_WRONG_VERSION_NUMBER', 'not_tls', 'PCDS_TEMPORAL_ADDRESS'],
    ['tls', 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', 'client_certificate', 'PCDS_TEMPORAL_TLS_CERT'],
    [
      'after-handshake',
      'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
      'client_certificate',
      'PCDS_TEMPORAL_TLS_CERT',
    ],
    ['after-handshake', 'CLOSED', 'client_certificate', 'PCDS_TEMPORAL_TLS_CERT'],
  ] as const)('%s %s: %s (%s)', (stage, code, problem, setting) => {
    const err = transportProblem({ ok: false, stage, code }, ctx);
    expect(err.problem).toBe(problem);
    expect(err.setting).toBe(setting);
    expect(err.code).toBe('temporal_unreachable');
    expect(err.message).toContain(setting);
    expect(err.message).toContain(code);
  });

  it('UNAUTHENTICATED names the API key; PERMISSION_DENIED the namespace and credentials', () => {
    expect(statusProblem(16, ctx)?.message).toMatch(/refused the API key.*PCDS_TEMPORAL_API_KEY/);
    expect(statusProblem(16, { ...ctx, apiKey: false })?.message).toMatch(
      /requires credentials.*PCDS_TEMPORAL_API_KEY, or PCDS_TEMPORAL_TLS_CERT/,
    );
    expect(statusProblem(7, ctx)?.message).toMatch(
      /may not use namespace ns .*PCDS_TEMPORAL_NAMESPACE.*PCDS_TEMPORAL_API_KEY/,
    );
    // Other statuses are not about credentials.
    expect(statusProblem(14, ctx)).toBeUndefined();
  });
});
