// The cluster's frontend is on mutual TLS (`npm run test:cluster` only): the suites beside this
// file reach it with the client certificate; here `pcds` processes without the right settings are
// refused, each with the message that names the setting to fix.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLUSTER_TLS } from '../../scripts/temporal-cluster.js';
import { runCli, STACK_FRAME } from '../cli/cli-env.js';
import { temporalAddress, testEncryptionEnv, testNamespace } from '../harness/temporal.js';

if (process.env.PCDS_TEST_CLUSTER !== '1') {
  throw new Error(
    'test/cluster needs the cluster on mutual TLS: run it with `npm run test:cluster`, which brings it up',
  );
}

const dataDir = mkdtempSync(join(tmpdir(), 'pcds-cluster-tls-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** A worker's settings on the cluster, with `tls` as its only TLS settings. */
const env = (tls: Record<string, string>): Record<string, string> => ({
  PCDS_TEMPORAL_ADDRESS: temporalAddress(),
  PCDS_TEMPORAL_NAMESPACE: testNamespace(),
  PCDS_API_KEY: 'cluster-tls-key',
  PCDS_API_SECRET: 'cluster-tls-secret',
  PCDS_THROTTLE: 'off',
  PCDS_DATA_DIR: dataDir,
  ...testEncryptionEnv(),
  ...tls,
});

const at = temporalAddress().replace(/\./g, '\\.');

/** The one line a refused `pcds` prints: its message, the stable code, no stack. */
function expectRefused(r: { code: number | null; stderr: string }, message: RegExp): void {
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).toMatch(/\(temporal_unreachable\)$/m);
  expect(r.stderr).not.toMatch(STACK_FRAME);
}

describe('a worker on the mutual-TLS frontend', () => {
  it('is refused without a client certificate, and told to set PCDS_TEMPORAL_TLS_CERT/_KEY', async () => {
    const r = await runCli(['worker'], env({ PCDS_TEMPORAL_TLS_CA: CLUSTER_TLS.ca }));
    expectRefused(
      r,
      new RegExp(
        `^error: Temporal at ${at} requires a client certificate \\(mutual TLS\\) \\(\\w+\\): set PCDS_TEMPORAL_TLS_CERT and PCDS_TEMPORAL_TLS_KEY`,
        'm',
      ),
    );
  });

  it("is refused with a certificate of another CA, and told it is the certificate's fault", async () => {
    const r = await runCli(
      ['worker'],
      env({
        PCDS_TEMPORAL_TLS_CERT: CLUSTER_TLS.otherClientCert,
        PCDS_TEMPORAL_TLS_KEY: CLUSTER_TLS.otherClientKey,
        PCDS_TEMPORAL_TLS_CA: CLUSTER_TLS.ca,
      }),
    );
    expectRefused(
      r,
      new RegExp(
        `^error: Temporal at ${at} refused this client's certificate \\(\\w+\\): set PCDS_TEMPORAL_TLS_CERT and PCDS_TEMPORAL_TLS_KEY to a certificate signed by a CA the server trusts`,
        'm',
      ),
    );
  });

  it("names PCDS_TEMPORAL_TLS_CA when it does not trust the server's CA", async () => {
    const r = await runCli(
      ['worker'],
      env({
        PCDS_TEMPORAL_TLS_CERT: CLUSTER_TLS.clientCert,
        PCDS_TEMPORAL_TLS_KEY: CLUSTER_TLS.clientKey,
        PCDS_TEMPORAL_TLS_CA: CLUSTER_TLS.otherCa,
      }),
    );
    expectRefused(
      r,
      new RegExp(
        `^error: Temporal at ${at}: its certificate is not signed by a CA this client trusts \\(\\w+\\): set PCDS_TEMPORAL_TLS_CA`,
        'm',
      ),
    );
  });

  it('is told the server speaks TLS when it connects in plain', async () => {
    const r = await runCli(['worker'], env({}));
    expectRefused(
      r,
      new RegExp(`^error: Temporal at ${at} speaks TLS and this client connected in plain`, 'm'),
    );
  });
});

describe('a CLI client on the mutual-TLS frontend', () => {
  it('lists batches with the client certificate, and names the fix without it', async () => {
    const ok = await runCli(
      ['batch', 'list', '--json'],
      env({
        PCDS_TEMPORAL_TLS_CERT: CLUSTER_TLS.clientCert,
        PCDS_TEMPORAL_TLS_KEY: CLUSTER_TLS.clientKey,
        PCDS_TEMPORAL_TLS_CA: CLUSTER_TLS.ca,
        PCDS_TEMPORAL_TLS_SERVER_NAME: CLUSTER_TLS.serverName,
      }),
    );
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(Array.isArray(JSON.parse(ok.stdout))).toBe(true);
    const refused = await runCli(
      ['batch', 'list', '--json'],
      env({ PCDS_TEMPORAL_TLS_CA: CLUSTER_TLS.ca }),
    );
    expectRefused(
      refused,
      new RegExp(
        `^error: Temporal at ${at} requires a client certificate \\(mutual TLS\\) \\(\\w+\\): set PCDS_TEMPORAL_TLS_CERT and PCDS_TEMPORAL_TLS_KEY`,
        'm',
      ),
    );
  });
});
