// `npm run test:cluster`: the batch, call and webhook integration tests plus the topology, TLS and
// store-across-hosts tests (test/cluster), against the Temporal cluster on PostgreSQL, its frontend
// on mutual TLS, that scripts/temporal-cluster.ts brings up (it sets PCDS_TEST_TEMPORAL_ADDRESS,
// PCDS_TEST_TEMPORAL_NAMESPACE and PCDS_TEMPORAL_TLS_*; see test/harness/global-setup.ts). Run
// through that script, not directly.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    maxWorkers: 2,
    // Under CI the JSON report gives .ci/run the cluster run's counts.
    reporters: process.env.CI
      ? ['default', ['json', { outputFile: '.test-results-cluster.json' }]]
      : ['default'],
    globalSetup: ['test/harness/global-setup.ts'],
    setupFiles: ['test/harness/encryption-env.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'cluster',
          include: [
            'test/batch/**/*.test.ts',
            'test/calls/**/*.test.ts',
            'test/webhooks/**/*.test.ts',
            // Clients refused by the mutual-TLS frontend (the server stays up meanwhile).
            'test/cluster/tls.test.ts',
          ],
          sequence: { groupOrder: 0 },
        },
      },
      {
        // The topology tests restart the Temporal server: they run once the others have ended, so
        // no other file sees the server go away under it.
        extends: true,
        test: {
          name: 'cluster-topology',
          include: ['test/cluster/**/*.test.ts'],
          exclude: ['test/cluster/tls.test.ts', 'test/cluster/store-hosts.test.ts'],
          sequence: { groupOrder: 1 },
        },
      },
      {
        // The store across hosts restarts the server too: after the topology tests, alone.
        extends: true,
        test: {
          name: 'cluster-store-hosts',
          include: ['test/cluster/store-hosts.test.ts'],
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
