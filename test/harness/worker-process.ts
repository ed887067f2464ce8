// A real worker in a child process (`node dist/worker.js`, the compiled worker `npm test` builds
// first, as the CLI tests run the compiled `pcds`) on the shared test server, for tests that kill
// one with SIGKILL. Resolves once it polls its task queue.
import { spawn, type ChildProcess } from 'node:child_process';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { testTemporalEnv, workflowBundleEnv } from './temporal.js';

/** The worker's stderr so far, for a test that reads what it said. */
export const workerLog = new WeakMap<ChildProcess, () => string>();

/** The compiled worker: no TypeScript loader in the child (it took half a second of each start). */
export const WORKER_SCRIPT = 'dist/worker.js';

export async function spawnWorkerProcess(
  taskQueue: string,
  env: Record<string, string>,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [WORKER_SCRIPT], {
    cwd: projectRoot(),
    env: {
      ...process.env,
      ...testTemporalEnv(),
      ...workflowBundleEnv({ ...process.env, ...env }),
      PCDS_TASK_QUEUE: taskQueue,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  workerLog.set(child, () => log);
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes('worker polling task queue')) resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`worker exited (${code}) before polling:\n${log}`)),
    );
  });
  return child;
}
