// The dev server's own ceiling for the batch benchmark: a workflow with one trivial activity.
import { proxyActivities } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '30 seconds' });

export async function oneActivity(): Promise<void> {
  await noop();
}
