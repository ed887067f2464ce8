// Two projects: `unit` (pure functions, no server) and `integration` (everything else, against
// one real Temporal dev server started by the global setup).
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take a minute or more (measured in CI runs, longest first), then the slowest
 * unit files (about 30 s and 10 s). Vitest starts the files it has seen take longest first, but a
 * fresh clone has no such record and it orders them by size: these small ones started last, and
 * the run ended with them alone (two minutes for the integration files; the unit project, which
 * starts after them, ended on the two unit files for about 25 s).
 */
const LONGEST = [
  'test/batch/kills-unknown-compact.test.ts',
  'test/batch/kills-unknown-rows.test.ts',
  'test/cli/call.test.ts',
  'test/cli/no-worker.test.ts',
  'test/cli/dev.test.ts',
  'test/metrics/worker-metrics.test.ts',
  'test/throttle/shared-pool.test.ts',
  'test/cli/batch-export.test.ts',
  'test/privacy/web-ui.test.ts',
  'test/unit/store/load.test.ts',
  'test/unit/client/typed-endpoints.test.ts',
];

/** Vitest's order, with the files above moved to the front. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) =>
      LONGEST.findIndex((path) => file.moduleId.endsWith(`/${path}`));
    const first = sorted.filter((f) => rank(f) >= 0).sort((a, b) => rank(a) - rank(b));
    return [...first, ...sorted.filter((f) => rank(f) < 0)];
  }
}

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
    sequence: { sequencer: LongestFirst },
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
