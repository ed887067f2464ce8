// The dev server's own ceiling for the batch benchmarks: one-activity workflows started as fast
// as possible and run by a worker in this process, in workflows per second.
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { Worker, type NativeConnection } from '@temporalio/worker';

export async function devServerCeiling(
  client: Client,
  connection: NativeConnection,
  workflows: number,
): Promise<number> {
  const taskQueue = 'bench-ceiling';
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: fileURLToPath(new URL('./batch-ceiling-workflow.ts', import.meta.url)),
    activities: { noop: async () => undefined },
    maxConcurrentWorkflowTaskExecutions: 100,
  });
  const runId = Date.now();
  return worker.runUntil(async () => {
    const started = Date.now();
    const handles = [];
    for (let i = 0; i < workflows; i += 100) {
      const n = Math.min(100, workflows - i);
      handles.push(
        ...(await Promise.all(
          Array.from({ length: n }, (_, j) =>
            client.workflow.start('oneActivity', {
              taskQueue,
              workflowId: `ceiling-${runId}-${i + j}`,
            }),
          ),
        )),
      );
    }
    await Promise.all(handles.map((h) => h.result()));
    return workflows / ((Date.now() - started) / 1000);
  });
}
