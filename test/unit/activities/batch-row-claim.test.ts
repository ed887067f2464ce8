// A compact row's claim whose reply is lost: the store takes the claim, then the connection drops
// before the answer comes back (PostgreSQL cut at that moment). Nothing was sent, so the row must
// not end submit_outcome_unknown: the attempt claims again as the same owner until the store
// answers, then sends once. Runs runBatchRow with no server: a scripted service, an embedded store.
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { createBatchRowActivities, type BatchRowInput } from '../../../src/activities/batch-row.js';
import type { AcquireOptions } from '../../../src/throttle/permits.js';
import type { ActivityDeps } from '../../../src/activities/deps.js';
import { BatchStore, type LazyBatchStore } from '../../../src/store/index.js';
import { tempStore } from '../store/temp-store.js';

const RID = '9f86d081884c7d659a2feaa0c55ad015_1718000000_1';
const ok = (data: Record<string, unknown>) => ({ success: true, data, timestamp: 'now' });

async function rig(lostClaimReplies: number) {
  const store = new BatchStore(await tempStore());
  const claimRow = store.claimRow.bind(store);
  let lost = lostClaimReplies;
  // The claim is made, and then its reply is lost.
  store.claimRow = async (...args) => {
    const claim = await claimRow(...args);
    if (lost-- > 0) throw new Error('Connection terminated unexpectedly');
    return claim;
  };
  const service = { submits: 0, polls: 0 };
  const deps = {
    config: { PCDS_MAX_RESULT_BYTES: 1_000_000, PCDS_WEBHOOK_DELIVERY_CHECK_MS: 50 },
    clients: {
      get: () => ({
        submit: () => {
          service.submits += 1;
          return Promise.resolve({ httpStatus: 202, body: ok({ request_id: RID }) });
        },
        poll: () => {
          service.polls += 1;
          return Promise.resolve({
            httpStatus: 200,
            body: ok({ request_id: RID, status: 'completed', completed: true, result: { n: 1 } }),
          });
        },
      }),
    },
    permits: {
      acquire: (_k: string, _kind: string, { beforeSend }: AcquireOptions) =>
        beforeSend ? beforeSend() : Promise.resolve(),
      rateLimited: () => Promise.resolve(),
      creditsExhausted: () => Promise.resolve(),
    },
    store: { get: () => Promise.resolve(store) } as unknown as LazyBatchStore,
  } as unknown as ActivityDeps;
  return { store, service, deps };
}

const input: BatchRowInput = {
  batchId: 'b-claim',
  endpoint: 'person_enrichment',
  keyId: 'k1',
  row: 3,
  key: { email: 'sealed' },
  params: { email: 'a@b.example' },
  store: true,
  pollIntervalMs: 10,
  firstPollDelayMs: 0,
};

const attempt = (n: number) =>
  new MockActivityEnvironment({
    activityId: '7',
    attempt: n,
    workflowExecution: { workflowId: 'batch-b-claim', runId: 'run-1' },
  });

describe('a compact row whose claim reply is lost', () => {
  it('claims again as the same owner and sends once: the row ends found, not unknown', async () => {
    const { store, service, deps } = await rig(2);
    const end = await attempt(1).run(createBatchRowActivities(deps).runBatchRow, input);
    expect(end).toMatchObject({ outcome: { outcome: 'found', requestId: RID } });
    expect(service.submits).toBe(1);
    expect(await store.rowEntry(input.batchId, input.row)).toMatchObject({
      state: 'accepted',
      requestId: RID,
      owner: 'run-1/7/1',
    });
  });

  it('a later attempt finds the accepted job and polls it, never sending again', async () => {
    const { store, service, deps } = await rig(0);
    const activities = createBatchRowActivities(deps);
    await attempt(1).run(activities.runBatchRow, input);
    const end = await attempt(2).run(activities.runBatchRow, input);
    expect(end).toMatchObject({ outcome: { outcome: 'found', requestId: RID } });
    expect(service.submits).toBe(1);
    expect(service.polls).toBe(2);
    expect(await store.rowEntry(input.batchId, input.row)).toMatchObject({ state: 'accepted' });
  });
});
