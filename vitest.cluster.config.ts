// `npm run test:cluster`: the integration tests whose point is the production topology (listed
// below, each with its reason) and test/cluster, against the Temporal cluster on PostgreSQL, its
// frontend on mutual TLS, that scripts/temporal-cluster.ts brings up (it sets
// PCDS_TEST_TEMPORAL_ADDRESS, PCDS_TEST_TEMPORAL_NAMESPACE, PCDS_TEMPORAL_TLS_* and PCDS_STORE_URL;
// see test/harness/global-setup.ts). Run through that script, not directly.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    maxWorkers: 4,
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
          // What depends on the production topology, each file with its reason. The others (logic
          // that reads no state back from the server's persistence, the store or visibility: CSV
          // and CLI output, transports, caches on a file of their own, throttling, Web UI details)
          // run once, against the dev server, in `npm test`, which CI runs too.
          include: [
            // The main path on PostgreSQL: rows and results in the store, continue-as-new.
            'test/batch/batch.test.ts',
            // Continue-as-new with rows in flight, terminated calls found by a visibility query.
            'test/batch/carried-rows.test.ts',
            // The compact rows' ledger in the store; children counted by SQL visibility.
            'test/batch/compact.test.ts',
            // Pause and resume, a 402 and a full disk mid-batch: the batch waits in persistence.
            'test/batch/control.test.ts',
            // A reset replays the batch from its persisted history.
            'test/batch/reset.test.ts',
            // Repeated rows deduplicated by the store; the progress columns read by SQL visibility.
            'test/batch/spend.test.ts',
            // PostgreSQL out of reach mid-batch (its part runs here only).
            'test/batch/store-faults.test.ts',
            // The result cache of single calls in the PostgreSQL store.
            'test/calls/call-cache.test.ts',
            // A worker killed mid-poll: the call goes on from what the server persisted.
            'test/calls/durability.test.ts',
            // Idempotency keys resolved against running and closed workflows in persistence.
            'test/calls/idempotency.test.ts',
            // Webhook deliveries through the mutual-TLS frontend, the receiver restarted mid-batch.
            'test/webhooks/batch-webhooks.test.ts',
            // The worker process's receiver on the cluster's settings.
            'test/webhooks/worker-receiver.test.ts',
            // Clients refused by the mutual-TLS frontend (the server stays up meanwhile).
            'test/cluster/tls.test.ts',
            // `pcds doctor` against mutual TLS and the PostgreSQL store: its checks need the server
            // up, so it never runs beside the files that restart it.
            'test/cluster/doctor.test.ts',
            // Not here: test/batch/worker-killed.test.ts (a SIGKILLed worker; topology.test.ts and
            // store-hosts.test.ts kill workers on the cluster) and test/calls/server-outage.test.ts
            // (it runs and kills a dev server of its own, never the cluster's).
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
          exclude: [
            'test/cluster/tls.test.ts',
            'test/cluster/doctor.test.ts',
            'test/cluster/store-hosts.test.ts',
          ],
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
