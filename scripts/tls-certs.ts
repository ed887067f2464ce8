// Throwaway certificates for a Temporal frontend on mutual TLS, made with `openssl`: a CA, a server
// certificate for 127.0.0.1/localhost, a client certificate, and a second CA with its own client.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCertificates {
  dir: string;
  /** The CA that signs the server and the client certificates (the server trusts only it). */
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** Another CA and a client certificate it signed: the server must refuse that client. */
  otherCa: string;
  otherClientCert: string;
  otherClientKey: string;
  /** The name in the server certificate besides 127.0.0.1 and localhost. */
  serverName: string;
}

export const TEST_SERVER_NAME = 'temporal.pcds.test';

function openssl(args: string[], cwd: string): void {
  const result = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (result.error) throw new Error(`openssl: ${result.error.message}`);
  if (result.status !== 0)
    throw new Error(`openssl ${args[0]} failed (exit ${result.status}): ${result.stderr}`);
}

/** A CA key and self-signed certificate: `<name>.pem`, `<name>.key`. */
function makeCa(dir: string, name: string, subject: string): void {
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      subject,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
}

/** A leaf key and certificate signed by `ca`, with the given extensions. */
function makeLeaf(dir: string, name: string, ca: string, subject: string, ext: string): void {
  openssl(
    [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject,
    ],
    dir,
  );
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    ],
    dir,
  );
}

/** Where makeTestCertificates puts each file in `dir`. */
export function testCertificatePaths(dir: string): TestCertificates {
  const at = (file: string) => join(dir, file);
  return {
    dir,
    ca: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
    otherCa: at('other-ca.pem'),
    otherClientCert: at('other-client.pem'),
    otherClientKey: at('other-client.key'),
    serverName: TEST_SERVER_NAME,
  };
}

/** Makes the set in `dir` (created if missing); keys are readable by their owner only. */
export function makeTestCertificates(dir: string): TestCertificates {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  makeCa(dir, 'ca', '/CN=pcds test CA');
  // Server and client auth: the server's own internal worker presents it to the frontend too.
  makeLeaf(
    dir,
    'server',
    'ca',
    '/CN=temporal frontend',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n' +
      'extendedKeyUsage=serverAuth,clientAuth\n' +
      `subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:${TEST_SERVER_NAME}\n`,
  );
  const clientExt =
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n';
  makeLeaf(dir, 'client', 'ca', '/CN=pcds worker', clientExt);
  makeCa(dir, 'other-ca', '/CN=another CA');
  makeLeaf(dir, 'other-client', 'other-ca', '/CN=pcds worker of another CA', clientExt);
  return testCertificatePaths(dir);
}
