// A real worker in a child process (`node --import tsx src/worker.ts`) on the shared test server,
// for tests that kill one with SIGKILL. Resolves once it polls its task queue.
import { spawn, type ChildProcess } from 'node:child_process';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { testTemporalEnv, workflowBundleEnv } from './temporal.js';

/** The worker's stderr so far, for a test that reads what it said. */
export const workerLog = new WeakMap<ChildProcess, () => string>();

export async function spawnWorkerProcess(
  taskQueue: string,
  env: Record<string, string>,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
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
