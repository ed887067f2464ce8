// The policy of the shared throttle reaches Temporal's task queues: on the real dev server (with
// fairness on), a tenant's single call carries the interactive priority and its tenant's fairness
// key, and a batch's row workflows and compact row activities carry the batch's key and weight.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Priority } from '@temporalio/common';
import { sampleRows } from '../../src/emulator/index.js';
import { PRIORITY_KEYS } from '../../src/temporal/task-priority.js';
import { batchWorkflowId, rowWorkflowId, scopedId } from '../../src/contract/workflow-ids.js';
import { startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';
import { uniqueBatchId } from './fixtures.js';

let env: CallEnv;
beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

const rows = sampleRows({ rows: 3 }).map((r) => ({ email: r.email }));
/** What the server says of a priority (zero values are absent: inherited or default). */
const shown = (
  p:
    | { priorityKey?: number | null; fairnessKey?: string | null; fairnessWeight?: number | null }
    | null
    | undefined,
): Priority => ({
  ...(p?.priorityKey ? { priorityKey: p.priorityKey } : {}),
  ...(p?.fairnessKey ? { fairnessKey: p.fairnessKey } : {}),
  ...(p?.fairnessWeight ? { fairnessWeight: p.fairnessWeight } : {}),
});

it(
  'a call, a row workflow and a compact row activity carry their requester’s priority and fairness',
  { timeout: 120_000 },
  async () => {
    await withCallWorker(env, async (pcds) => {
      const tenant = `prio-${process.pid}`;
      const alice = pcds.withTenant(tenant);

      const call = await alice.startCall('person_enrichment', rows[0]);
      await call.result();
      const described = await call.workflow.describe();
      expect(shown(described.raw.workflowExecutionInfo?.priority)).toEqual({
        priorityKey: PRIORITY_KEYS.interactive,
        fairnessKey: `tenant:${tenant}`,
      });

      // Rows as workflows: each row's call carries the batch's key and weight.
      const local = uniqueBatchId('prio');
      const batch = await alice.startBatch({
        batchId: local,
        rows,
        window: 1,
        weight: 2.5,
        keyIds: [env.emulator.devKey.id],
      });
      expect(batch.batchId).toBe(local);
      const scoped = scopedId(tenant, local);
      expect(batch.workflowId).toBe(batchWorkflowId(scoped));
      await batch.result();
      const batchKey = {
        priorityKey: PRIORITY_KEYS.batch,
        fairnessKey: `batch:${scoped}`,
        fairnessWeight: 2.5,
      };
      const row = await pcds.temporal.workflow.getHandle(rowWorkflowId(scoped, 2, 'v2')).describe();
      expect(shown(row.raw.workflowExecutionInfo?.priority)).toEqual(batchKey);
      const parent = await pcds.temporal.workflow.getHandle(batchWorkflowId(scoped)).describe();
      expect(shown(parent.raw.workflowExecutionInfo?.priority)).toEqual(batchKey);

      // A compact batch: the row activity, seen pending while it waits for its job's poll.
      const compactId = uniqueBatchId('prio-compact');
      const compact = await alice.startBatch({
        batchId: compactId,
        rows,
        window: 1,
        weight: 0.5,
        compact: true,
        pollIntervalMs: 1_500,
        keyIds: [env.emulator.devKey.id],
      });
      const handle = pcds.temporal.workflow.getHandle(compact.workflowId);
      let seen: Priority | undefined;
      const deadline = Date.now() + 60_000;
      while (!seen && Date.now() < deadline) {
        const d = await handle.describe();
        const pending = d.raw.pendingActivities?.find(
          (a) => a.activityType?.name === 'runBatchRow',
        );
        if (pending) seen = shown(pending.priority);
        else await new Promise((r) => setTimeout(r, 50));
      }
      expect(seen).toEqual({
        priorityKey: PRIORITY_KEYS.batch,
        fairnessKey: `batch:${scopedId(tenant, compactId)}`,
        fairnessWeight: 0.5,
      });
      await compact.result();
    });
  },
);
