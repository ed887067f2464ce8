// Two projects: `unit` (pure functions, no server) and `integration` (everything else, against
// one real Temporal dev server started by the global setup).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Most integration files wait on timers, servers and child processes rather than the CPU:
    // four at once keep two cores busy (the whole run took 950 s against 1,251 s with two; six
    // were no faster, the longest files deciding the end).
    maxWorkers: 4,
    // A worker process runs file after file with the modules it has loaded (the Temporal SDK's
    // native core among them) instead of loading them again for each: the run took 455 s against
    // 536 s. So a test file leaves no process-wide state behind (environment variables, installed
    // runtimes, module-level settings): what it starts, it stops.
    isolate: false,
    // Under CI the JSON report gives .ci/run its closing `N passed, N failed` line.
    reporters: process.env.CI
      ? ['default', ['json', { outputFile: '.test-results.json' }]]
      : ['default'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          // test/cluster restarts its server: `npm run test:cluster` runs it (vitest.cluster.config.ts).
          exclude: ['test/unit/**', 'test/cluster/**', '**/node_modules/**'],
          globalSetup: ['test/harness/global-setup.ts'],
          setupFiles: ['test/harness/encryption-env.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
