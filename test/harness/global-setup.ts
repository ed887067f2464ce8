// Starts one in-memory Temporal dev server for the whole integration run and hands its address
// to the test files through vitest's provide/inject.
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { findOrInstallTemporalCli, projectRoot } from '../../src/temporal/cli-binary.js';
import { startDevServer } from '../../src/temporal/dev-server.js';
import { loadConfig } from '../../src/config.js';
import { connectTemporalClient, temporalConnectionOptions } from '../../src/temporal/connection.js';
import { registerSearchAttributes } from '../../src/temporal/search-attributes.js';
import { writeWorkflowBundle } from '../../src/worker/bundle.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
    /** The run's payload encryption key (base64): tests run encrypted, as production does. */
    encryptionKey: string;
    /** The run's id secret (PCDS_ID_SECRET): idempotency keys make keyed ids, as in production. */
    idSecret: string;
    /**
     * The project's workflows, bundled once for the run as `pcds worker --write-bundle` does, with
     * failures encoded (the tests run encrypted): the workers of test files (test/harness
     * workflowBundle) and of child processes (workflowBundleEnv) load it.
     */
    workflowBundlePath: string;
  }
}

/** Bundles the project's workflows into a file every worker of the run loads. */
async function bundleOnce(project: TestProject): Promise<() => void> {
  const dir = join(projectRoot(), '.data', 'test-bundle');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `workflows-${process.pid}.js`);
  await writeWorkflowBundle(path, true);
  project.provide('workflowBundlePath', path);
  return () => rmSync(path, { force: true });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  project.provide('encryptionKey', randomBytes(32).toString('base64'));
  const removeBundle = await bundleOnce(project);
  project.provide('idSecret', randomBytes(32).toString('base64'));
  // PCDS_TEST_TEMPORAL_ADDRESS points the suite at a server you already run (faster reruns).
  const external = process.env.PCDS_TEST_TEMPORAL_ADDRESS;
  if (external) {
    const namespace = process.env.PCDS_TEST_TEMPORAL_NAMESPACE ?? 'default';
    // Its PCDS_TEMPORAL_TLS_* settings come from the environment (the cluster runs on mutual TLS).
    const connection = await connectTemporalClient(
      temporalConnectionOptions(
        loadConfig({
          ...process.env,
          PCDS_TEMPORAL_ADDRESS: external,
          PCDS_TEMPORAL_NAMESPACE: namespace,
        }),
      ),
    );
    try {
      await registerSearchAttributes(connection, namespace);
    } finally {
      await connection.close();
    }
    project.provide('temporalAddress', external);
    project.provide('temporalNamespace', namespace);
    return async () => removeBundle();
  }

  const cliPath = await findOrInstallTemporalCli();
  const started = Date.now();
  const server = await startDevServer({
    cliPath,
    headless: true,
    logLevel: 'warn',
    logFile: join(projectRoot(), '.data', 'temporal', 'test-server.log'),
  });
  process.stderr.write(
    `temporal dev server ${server.address} ready in ${Date.now() - started} ms (log: ${server.logFile})\n`,
  );
  project.provide('temporalAddress', server.address);
  project.provide('temporalNamespace', server.namespace);
  return async () => {
    removeBundle();
    await server.stop();
  };
}
